//go:build !unix

package urlx

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
