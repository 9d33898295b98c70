// Package storetest is the conformance suite of store.Store: every store
// (bbolt, Redis, and any third) runs the same tests, as nats-server runs its
// stream tests against the file and the memory store.
//
// A store's own tests call Run with a Backend that makes an empty, isolated
// store per test:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) func() store.Store {
//			dir := t.TempDir()
//			return func() store.Store {
//				s, err := mystore.Open(dir) // the same data on every call
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { s.Close() })
//				return s
//			}
//		})
//	}
//
// See docs/store.md, "Adding a store".
package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/store"
)

// Opener opens a test's store. Calling it again after Close reopens the same
// data (bbolt: the same file; Redis: a new client on the same prefix): the
// suite checks what survives a restart. A store it returns should be closed
// by a t.Cleanup of the Backend; the suite also closes some itself, so Close
// must be safe to call twice.
type Opener = func() store.Store

// Backend makes an empty store namespace for one test, isolated from every
// other test's (a temporary directory, a random key prefix), and cleans it
// up with t.Cleanup.
type Backend = func(t testing.TB) Opener

// ScanChunk is the most fingerprints Scan may hand fn in one call: the
// suite records more than twice as many and checks that they come in
// bounded chunks (bbolt and Redis use exactly this).
const ScanChunk = 1 << 16

// Run runs the conformance suite against the stores newStore makes, one
// subtest per behaviour, each on a fresh namespace.
func Run(t *testing.T, newStore Backend) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"SeenRecord", testSeenRecord},
		{"SeenProperty", testSeenProperty},
		{"ScanCount", testScanCount},
		{"ApplyReplay", testApplyReplay},
		{"Step", testStep},
		{"IntakeLog", testIntakeLog},
		{"FIFO", testFIFO},
		{"Order", testOrder},
		{"HostBudget", testHostBudget},
		{"HostQueueCap", testHostQueueCap},
		{"NotBefore", testNotBefore},
		{"StaleDone", testStaleDone},
		{"PopSkips", testPopSkips},
		{"Expire", testExpire},
		{"Reopen", testReopen},
		{"Budget", testBudget},
		{"BudgetConcurrent", testBudgetConcurrent},
		{"Stats", testStats},
		{"RevisitSchedule", testRevisitSchedule},
		{"BadArgs", testBadArgs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

// t0 is the fixed issue time of the suite's tasks.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// dump renders a value as JSON, for comparisons and messages.
func dump(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(data)
}
