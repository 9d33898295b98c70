package app

import (
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Issue 19 #8: run --nats-listen off loopback without credentials is
// warned about; on loopback, or with a token or a user, it is not.
func TestListenWarning(t *testing.T) {
	open := bus.EmbeddedOptions{}
	for _, tt := range []struct {
		listen string
		eo     bus.EmbeddedOptions
		warn   bool
	}{
		{"", open, false},
		{"127.0.0.1:4223", open, false},
		{"127.1.2.3:4223", open, false},
		{"[::1]:4223", open, false},
		{"localhost:4223", open, false},
		{":4223", open, true}, // every interface
		{"0.0.0.0:4223", open, true},
		{"[::]:4223", open, true},
		{"10.1.2.3:4223", open, true},
		{"nats.example:4223", open, true},
		{"0.0.0.0:4223", bus.EmbeddedOptions{Token: "t"}, false},
		{"0.0.0.0:4223", bus.EmbeddedOptions{User: "u", Password: "p"}, false},
	} {
		w := listenWarning(tt.listen, tt.eo)
		if (w != "") != tt.warn || (w != "" && !strings.Contains(w, "--nats-token")) {
			t.Errorf("listen %q with %+v: warning %q, want one: %v", tt.listen, tt.eo, w, tt.warn)
		}
	}
}
