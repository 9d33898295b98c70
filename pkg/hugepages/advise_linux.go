package hugepages

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// advise asks for huge pages over length bytes from p (both multiples of
// Size). Fresh heap memory is not yet faulted in, so its first touch takes
// a huge page. An error (an old kernel, huge pages compiled out) leaves the
// small pages.
func advise(p unsafe.Pointer, length uintptr) {
	if length == 0 {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(p), length), unix.MADV_HUGEPAGE)
}
