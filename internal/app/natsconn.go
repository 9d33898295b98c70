package app

import (
	"net"
	"net/netip"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
)

// NATSOptions are cfg's NATS credentials and TLS settings.
func NATSOptions(cfg config.Config) bus.ConnectOptions {
	return bus.ConnectOptions{
		CredsFile: cfg.NATSCreds, NKeyFile: cfg.NATSNKey, User: cfg.NATSUser, Password: cfg.NATSPassword,
		Token: cfg.NATSToken, TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey,
	}
}

// loopbackListen reports whether a host:port listens on loopback only.
func loopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// listenWarning is the warning to log when the embedded NATS server of run
// listens on listen (--nats-listen) off loopback and takes clients without
// credentials; "" otherwise.
func listenWarning(listen string, eo bus.EmbeddedOptions) string {
	if listen == "" || !eo.Open() || loopbackListen(listen) {
		return ""
	}
	return "the embedded NATS server accepts anyone who can reach " + listen +
		", with full JetStream access: set --nats-token (or TRAWLER_NATS_TOKEN), or listen on 127.0.0.1"
}
