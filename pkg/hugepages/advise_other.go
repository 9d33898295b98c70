//go:build !linux

package hugepages

import "unsafe"

func advise(unsafe.Pointer, uintptr) {}
