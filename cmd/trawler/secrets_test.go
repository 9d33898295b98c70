package main

import (
	"net"
	"strings"
	"testing"
)

// Issue 19 #3: no command prints the password or token of a NATS URL or a
// Redis address it could not reach or would not take.
func TestCommandsNeverPrintCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, args := range [][]string{
		{"status", "--nats", "nats://trawler:s3cret@" + closed},
		{"status", "--nats", "nats://s3cret-token@" + closed, "--json"},
		{"tap", "--nats", "nats://trawler:s3cret@" + closed, "pages.parsed"},
		{"seed", "--nats", "nats://trawler:s3cret@" + closed, "https://example.org/"},
		{"fetcher", "--nats", "nats://trawler:s3cret@" + closed + ",nats://u:s3cret@" + closed},
		{"dedup", "--nats", "nats://trawler:s3cret@" + closed, "--redis", "redis://:s3cret@" + closed},
		{"status", "--redis", "redis://default:s3cret@" + closed},
	} {
		code, out, errOut := trawler(t, args...)
		if code == 0 {
			t.Errorf("%s: exit 0", strings.Join(args, " "))
		}
		if strings.Contains(out+errOut, "s3cret") {
			t.Errorf("trawler %s printed the secret:\n%s%s", args[0], out, errOut)
		}
		if !strings.Contains(errOut, "xxxxx") {
			t.Errorf("trawler %s: no redacted URL in the error:\n%s", args[0], errOut)
		}
	}
}
