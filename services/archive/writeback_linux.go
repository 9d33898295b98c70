package archive

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the bytes [off, off+n)
// of f to disk and returns without waiting (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE). It makes nothing durable: the fsync that
// follows does, sooner. Errors are left to that fsync.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
