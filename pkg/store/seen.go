package store

import "slices"

// scanChunk is the most fingerprints Scan hands fn at once (512 KB).
const scanChunk = 1 << 16

// sortedDistinct returns the batch's fingerprints sorted, without repeats.
func sortedDistinct(fps []uint64) []uint64 {
	s := slices.Clone(fps)
	slices.Sort(s)
	return slices.Compact(s)
}
