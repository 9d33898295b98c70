package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURLs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://u:p@h:1,tls://tok@h:2,nats://h:3", "nats://u:xxxxx@h:1,tls://xxxxx@h:2,nats://h:3"},
		{"redis://:s3cret@redis:6379/0", "redis://:xxxxx@redis:6379/0"},
		{"rediss://default:s3cret@redis:6379", "rediss://default:xxxxx@redis:6379"},
		{"user:s3cret@redis:6379", "user:xxxxx@redis:6379"}, // no scheme
		{"nats://u:p@ss/w@rd@h:1", "nats://u:xxxxx@h:1"},    // net/url refuses it
		{"127.0.0.1:6379", "127.0.0.1:6379"},
		{"", ""},
	} {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The same as url.URL.Redacted where net/url parses the URL and a
	// password is present.
	for _, raw := range []string{"nats://trawler:pw@nats:4222", "redis://:pw@r:6379/1?x=y"} {
		u, _ := url.Parse(raw)
		if URLs(raw) != u.Redacted() {
			t.Errorf("URLs(%q) = %q, url.Redacted %q", raw, URLs(raw), u.Redacted())
		}
	}
}

func TestIn(t *testing.T) {
	list := "nats://trawler:s3cret%40pw@h:1,nats://t0ken-s3cret@h:2,nats://u:p@ss@h:3"
	msg := `dial nats://trawler:s3cret%40pw@h:1: refused; auth "s3cret@pw" failed; token t0ken-s3cret; parse "nats://u:p@ss@h:3": net/url: invalid userinfo`
	got := In(msg, list)
	for _, secret := range []string{"s3cret", "p@ss"} {
		if strings.Contains(got, secret) {
			t.Errorf("In left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "trawler:xxxxx@h:1") || !strings.Contains(got, "refused") {
		t.Errorf("In = %q: want the user and the rest of the message kept", got)
	}
}
