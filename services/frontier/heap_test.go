package frontier

import (
	"testing"
	"time"
)

func TestTimeHeapKeepDropsAndStaysOrdered(t *testing.T) {
	var h timeHeap
	t0 := time.Unix(0, 0)
	for i := range 100 {
		h.push(t0.Add(time.Duration((i*37)%100)*time.Millisecond), "host", string(rune('a'+i%2)))
	}
	h.keep(func(e timeEntry) bool { return e.task == "a" })
	if h.Len() != 50 {
		t.Fatalf("kept %d entries, want 50", h.Len())
	}
	last := time.Time{}
	for h.Len() > 0 {
		e := h.pop()
		if e.task != "a" || e.at.Before(last) {
			t.Fatalf("popped %+v after %v", e, last)
		}
		last = e.at
	}
}
