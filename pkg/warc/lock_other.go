//go:build !unix

package warc

import "os"

// lock is a no-op where flock is missing: run Recover only when no writer
// shares the directory.
func lock(*os.File) error { return nil }
