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
		if err := canListen(o.Listen, opts.Port); err != nil {
			return nil, err
		}
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
		return nil, fmt.Errorf("embedded NATS: not ready after 30s (store dir %s; the server's log above says why)", o.StoreDir)
	}
	return ns, nil
}

// canListen tries the listen address before the server does: the server
// only logs a port it cannot bind, and the wait for it to be ready would
// end 30 s later saying nothing of why. Port 0 or below (the server's
// default or a random one) is left to the server.
func canListen(addr string, port int) error {
	if port <= 0 {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("embedded NATS: cannot listen on %s (--nats-listen): %w; stop what listens there or choose another address", addr, err)
	}
	return ln.Close()
}

// ConnectEmbedded opens an in-process client connection to ns.
func ConnectEmbedded(ns *server.Server, name string, auth ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.InProcessServer(ns), nats.Name(name), nats.MaxReconnects(-1)}, auth...)...)
}
