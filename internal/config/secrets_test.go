package config

import (
	"strings"
	"testing"
)

// Issue 19 #3: NATS credentials come from the environment (as the chart
// passes them from a Secret), not only from flags that show in ps.
func TestNATSCredentialsFromEnvironment(t *testing.T) {
	t.Setenv("TRAWLER_NATS_USER", "trawler")
	t.Setenv("TRAWLER_NATS_PASSWORD", "s3cret")
	t.Setenv("TRAWLER_NATS_TOKEN", "t0ken")
	t.Setenv("TRAWLER_NATS_CREDS", "/etc/trawler/nats-auth/user.creds")
	t.Setenv("TRAWLER_NATS_NKEY", "/etc/trawler/nats-auth/user.nk")
	t.Setenv("TRAWLER_NATS_TLS_CA", "/ca.pem")
	t.Setenv("TRAWLER_NATS_TLS_CERT", "/tls.crt")
	t.Setenv("TRAWLER_NATS_TLS_KEY", "/tls.key")
	c, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{c.NATSUser, c.NATSPassword, c.NATSToken, c.NATSCreds, c.NATSNKey, c.NATSTLSCA, c.NATSTLSCert, c.NATSTLSKey}
	want := []string{"trawler", "s3cret", "t0ken", "/etc/trawler/nats-auth/user.creds", "/etc/trawler/nats-auth/user.nk", "/ca.pem", "/tls.crt", "/tls.key"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("setting %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// Issue 19 #3: --redis takes addresses; a URL with a password is refused
// without the password showing in the error.
func TestRedisURLRefusedWithoutShowingThePassword(t *testing.T) {
	for _, addr := range []string{"redis://:s3cret@127.0.0.1:6379", "rediss://default:s3cret@redis:6379/0", "user:s3cret@redis:6379"} {
		c, err := parse(t, []string{"--redis", "127.0.0.1:6380," + addr})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "TRAWLER_REDIS_PASSWORD") {
			t.Errorf("--redis %s: %v", addr, err)
		}
	}
	c, _ := parse(t, []string{"--redis", "127.0.0.1:6379,[::1]:6380,redis-0.redis:6379"})
	if err := c.Validate(); err != nil {
		t.Errorf("plain addresses: %v", err)
	}
}
