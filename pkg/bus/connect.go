package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/redact"
)

// ConnectOptions are a client's credentials and TLS settings. Secrets come
// from files or the environment (TRAWLER_NATS_PASSWORD, TRAWLER_NATS_TOKEN),
// never from the URL, which is logged.
type ConnectOptions struct {
	CredsFile string // a .creds file: user JWT and NKey seed (NATS accounts)
	NKeyFile  string // a file holding a user NKey seed
	User      string
	Password  string
	Token     string
	TLSCA     string // PEM file of CAs to trust in addition to the system's
	TLSCert   string // PEM client certificate (mutual TLS), with TLSKey
	TLSKey    string
}

func (o ConnectOptions) options() ([]nats.Option, error) {
	var opts []nats.Option
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NKeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey %s: %w", o.NKeyFile, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, fmt.Errorf("--nats-tls-cert and --nats-tls-key go together")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return opts, nil
}

// Connect opens a client connection to an external NATS server (url may
// list several, comma-separated) that retries forever on disconnects, as a
// long-running service must. Errors name the servers without credentials.
func Connect(url, name string, o ConnectOptions) (*nats.Conn, error) {
	auth, err := o.options()
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.Timeout(5 * time.Second),
	}, auth...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		hint := ""
		if errors.Is(err, nats.ErrNoServers) {
			hint = "; nothing answers there: start NATS with JetStream (or a `trawler run --nats-listen`) at that address, or point --nats at a running server"
		}
		return nil, fmt.Errorf("connect to NATS at %s: %s%s", Redact(url), redact.In(err.Error(), url), hint)
	}
	return nc, nil
}

// Redact returns a NATS URL list with every password and token replaced by
// "xxxxx", for logs and errors (redact.URLs).
func Redact(urls string) string { return redact.URLs(urls) }

// ClientErrors returns a handler for the client's asynchronous errors that
// puts each on log as one line saying what follows from it (the client's
// default prints a bare "nats: slow consumer" to stderr).
func ClientErrors(log *slog.Logger) nats.ErrHandler {
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		if errors.Is(err, nats.ErrSlowConsumer) {
			log.Warn("NATS dropped messages this process did not take in time; JetStream delivers them again after their ack wait (a slow or overloaded process: give it more CPU)",
				"subject", subject)
			return
		}
		log.Warn("NATS client error; the connection stays up (see the NATS server's log, and this client's permissions if it says so)",
			"subject", subject, "err", err)
	}
}
