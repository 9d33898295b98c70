//go:build unix

package archive

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on f without waiting; it lasts until
// f is closed or its process dies, which is how recovery tells a live
// replica's .open file from a crashed one's.
func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
