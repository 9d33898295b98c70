package hugepages

import (
	"testing"
	"unsafe"
)

// A large array starts on a huge page boundary, has its length and is
// zeroed; a small one is a plain slice.
func TestAlignedAndZeroed(t *testing.T) {
	for _, n := range []int{0, 1, 1000, Size / 8, Size/8 + 17, 3 * Size / 8} {
		s := Uint64s(n)
		if len(s) != n || cap(s) != n && n >= Size/8 {
			t.Fatalf("Uint64s(%d): len %d cap %d", n, len(s), cap(s))
		}
		if n >= Size/8 {
			if a := uintptr(unsafe.Pointer(unsafe.SliceData(s))); a%Size != 0 {
				t.Errorf("Uint64s(%d) at %#x, not on a %d boundary", n, a, Size)
			}
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Uint64s(%d)[%d] = %d", n, i, v)
			}
		}
		for i := range s { // writable throughout
			s[i] = uint64(i)
		}
	}
	s := Uint32s(Size/4 + 5)
	if a := uintptr(unsafe.Pointer(unsafe.SliceData(s))); len(s) != Size/4+5 || a%Size != 0 {
		t.Errorf("Uint32s: len %d at %#x", len(s), a)
	}
}
