package frontier

import (
	"container/heap"
	"time"
)

// timeEntry is a host (and for leases, its task) due at a time.
type timeEntry struct {
	at   time.Time
	host string
	task string
}

// timeHeap is a min-heap of entries by time. Entries are not removed when
// they go stale; whoever pops one checks it against the host's state.
type timeHeap []timeEntry

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(timeEntry)) }
func (h *timeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (h *timeHeap) push(at time.Time, host, task string) { heap.Push(h, timeEntry{at, host, task}) }
func (h *timeHeap) pop() timeEntry                       { return heap.Pop(h).(timeEntry) }
func (h timeHeap) peek() timeEntry                       { return h[0] }

// keep drops the entries keep rejects and restores the heap order: stale
// entries otherwise stay until their time comes, which for leases is
// minutes of finished tasks.
func (h *timeHeap) keep(keep func(timeEntry) bool) {
	live := (*h)[:0]
	for _, e := range *h {
		if keep(e) {
			live = append(live, e)
		}
	}
	clear((*h)[len(live):]) // let the dropped strings go
	*h = live
	heap.Init(h)
}
