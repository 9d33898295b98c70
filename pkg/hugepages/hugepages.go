// Package hugepages allocates large arrays that are written at random (a
// Bloom filter's bits, a hash table's slots) so that the kernel may back
// them with huge pages.
//
// Such an array is touched all over from its first writes: a crawl's dedup
// Bloom filters (12 MB at the defaults) and the parser's host-splitter
// cache (2.7 MB of slots) faulted in some 3,500 small pages within the
// first second of every crawl, a tenth of a short crawl's CPU on a virtual
// machine where a fault costs tens of microseconds (docs/benchmarks.md).
// With transparent huge pages set to "madvise" (the common default) or
// "always", the same arrays take a fault per 2 MiB. Elsewhere (another OS,
// huge pages off) the arrays are plain Go slices and nothing changes.
package hugepages

import "unsafe"

// Size is the huge page size the arrays are aligned to (x86-64's and
// arm64's usual 2 MiB).
const Size = 2 << 20

// Uint64s returns a zeroed slice of n uint64s. One of Size bytes or more
// starts on a Size boundary and is advised for huge pages.
func Uint64s(n int) []uint64 {
	return aligned[uint64](n)
}

// Uint32s is Uint64s for uint32s.
func Uint32s(n int) []uint32 {
	return aligned[uint32](n)
}

// aligned allocates n Ts, with room to start them on a Size boundary when
// they fill at least a huge page, and advises that range. The slice keeps
// the whole allocation alive (an interior pointer), its head included.
func aligned[T uint32 | uint64](n int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if n <= 0 || uintptr(n)*size < Size {
		return make([]T, max(n, 0))
	}
	buf := make([]T, n+int(Size/size))
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	skip := int(((Size - addr%Size) % Size) / size)
	s := buf[skip : skip+n : skip+n]
	advise(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n)*size/Size*Size)
	return s
}
