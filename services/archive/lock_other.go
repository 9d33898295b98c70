//go:build !unix

package archive

import "os"

// lock is a no-op where flock is missing: give each replica its own directory.
func lock(*os.File) error { return nil }
