// Package bus is Trawler's layer over NATS JetStream: the embedded server of the
// all-in-one mode, connections, the idempotent topology (streams, durable
// consumers), pulling, batched publishing and dead-lettering.
package bus

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedMaxPayload lets fetched pages up to 8 MiB travel as one message on
// the embedded server (an external server's max_payload defaults to 1 MiB).
const EmbeddedMaxPayload = 8 << 20

// EmbeddedOptions configure the in-process NATS server.
type EmbeddedOptions struct {
	// StoreDir holds JetStream's files; a restart on the same dir resumes.
	StoreDir string
	// Listen is an optional host:port on which to also accept TCP clients (the
	// nats CLI, taps, trawler status). Empty: in-process connections only.
	Listen string
	// Token or User and Password, when set, are required of every client,
	// in-process ones included (ConnectEmbedded with EmbeddedAuth).
	Token, User, Password string
	// Log receives the server's warnings and errors (its notices at debug
	// level); nil: the server logs nothing.
	Log *slog.Logger
}

// Open reports whether the server accepts clients without credentials.
func (o EmbeddedOptions) Open() bool { return o.Token == "" && o.User == "" }

// EmbeddedAuth are the client options that authenticate to a server
// started with o.
func (o EmbeddedOptions) EmbeddedAuth() []nats.Option {
	switch {
	case o.Token != "":
		return []nats.Option{nats.Token(o.Token)}
	case o.User != "":
		return []nats.Option{nats.UserInfo(o.User, o.Password)}
	}
	return nil
}

// StartEmbedded starts a JetStream-enabled NATS server inside this process.
func StartEmbedded(o EmbeddedOptions) (*server.Server, error) {
	opts := &server.Options{
		ServerName: "trawler-embedded",
		JetStream:  true,
		StoreDir:   filepath.Clean(o.StoreDir),
		MaxPayload: EmbeddedMaxPayload,
		NoSigs:     true,
		NoLog:      o.Log == nil,
		DontListen: o.Listen == "",
	}
	switch {
	case o.Token != "":
		opts.Authorization = o.Token
	case o.User != "":
		opts.Username, opts.Password = o.User, o.Password
	}
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS listen address %q: %w", o.Listen, err)
		}
		if opts.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("embedded NATS listen port %q: %w", port, err)
		}
		opts.Host = host
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	if o.Log != nil {
		ns.SetLogger(serverLogger{o.Log}, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS: not ready after 30s (store dir %s)", o.StoreDir)
	}
	return ns, nil
}

// ConnectEmbedded opens an in-process client connection to ns.
func ConnectEmbedded(ns *server.Server, name string, auth ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.InProcessServer(ns), nats.Name(name), nats.MaxReconnects(-1)}, auth...)...)
}
