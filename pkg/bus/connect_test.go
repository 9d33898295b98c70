package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
)

// Issue 19 #3: a connection error never shows the password or token of
// the URL it was given.
func TestConnectErrorsHideCredentials(t *testing.T) {
	addr := testutil.ClosedAddr(t)
	for _, url := range []string{
		"nats://trawler:s3cret-pw@" + addr,
		"nats://s3cret-token@" + addr,
		"nats://a:s3cret-pw@" + addr + ",nats://b:s3cret-pw@" + addr,
	} {
		_, err := bus.Connect(url, t.Name(), bus.ConnectOptions{})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "xxxxx") || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v", bus.Redact(url), err)
		}
		// And it says what to do.
		if err != nil && !strings.Contains(err.Error(), "nothing answers there: start NATS") {
			t.Errorf("%s: %v lacks what to do", bus.Redact(url), err)
		}
	}
	if got := bus.Redact("nats://u:p@h:1,tls://tok@h:2,nats://h:3"); got != "nats://u:xxxxx@h:1,tls://xxxxx@h:2,nats://h:3" {
		t.Errorf("Redact = %q", got)
	}
}

func startServer(t *testing.T, configure func(*server.Options)) string {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}
	configure(o)
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

// Credentials come from files and options, not the URL: user and password,
// a token, an NKey seed file, and TLS with a CA file; without them the
// server refuses.
func TestConnectWithCredentialsAndTLS(t *testing.T) {
	dir := t.TempDir()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "user.nk")
	os.WriteFile(seedFile, seed, 0o600)
	caFile, serverTLS := testTLS(t, dir)

	for _, tt := range []struct {
		name   string
		server func(*server.Options)
		good   bus.ConnectOptions
	}{
		{"user", func(o *server.Options) { o.Username, o.Password = "trawler", "pw" }, bus.ConnectOptions{User: "trawler", Password: "pw"}},
		{"token", func(o *server.Options) { o.Authorization = "tok" }, bus.ConnectOptions{Token: "tok"}},
		{"nkey", func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} }, bus.ConnectOptions{NKeyFile: seedFile}},
		{"tls", func(o *server.Options) { o.TLSConfig = serverTLS; o.TLS = true }, bus.ConnectOptions{TLSCA: caFile}},
	} {
		url := startServer(t, tt.server)
		if tt.name == "tls" {
			url = strings.Replace(url, "nats://", "tls://", 1)
		}
		nc, err := bus.Connect(url, t.Name(), tt.good)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		nc.Close()
		if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{}); err == nil {
			t.Errorf("%s: connected without credentials", tt.name)
		}
	}
	if _, err := bus.Connect("nats://127.0.0.1:1", t.Name(), bus.ConnectOptions{TLSCert: "c.pem"}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

// Issue 19 #8: an embedded server with a token refuses clients without it,
// in-process ones included, and takes those that bring it.
func TestEmbeddedServerWithToken(t *testing.T) {
	o := bus.EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", Token: "listen-secret"}
	ns, err := bus.StartEmbedded(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	if _, err := bus.ConnectEmbedded(ns, t.Name()); err == nil {
		t.Error("in-process client without the token accepted")
	}
	nc, err := bus.ConnectEmbedded(ns, t.Name(), o.EmbeddedAuth()...)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if _, err := bus.Connect(ns.ClientURL(), t.Name(), bus.ConnectOptions{}); err == nil {
		t.Error("TCP client without the token accepted")
	}
	nc, err = bus.Connect(ns.ClientURL(), t.Name(), bus.ConnectOptions{Token: "listen-secret"})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// testTLS writes a CA certificate to dir and returns its file and a server
// TLS config with a certificate for 127.0.0.1 signed by it.
func testTLS(t *testing.T, dir string) (string, *tls.Config) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trawler test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	return caFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// The client's asynchronous errors reach the log as one line that says
// what follows, not the client's bare "nats: slow consumer" on stderr.
func TestClientErrorsSayWhatFollows(t *testing.T) {
	var buf strings.Builder
	handle := bus.ClientErrors(slog.New(slog.NewTextHandler(&buf, nil)))
	handle(nil, &nats.Subscription{Subject: "_INBOX.x"}, nats.ErrSlowConsumer)
	handle(nil, nil, errors.New("nats: permissions violation"))
	out := buf.String()
	for _, want := range []string{"delivers them again after their ack wait", "subject=_INBOX.x", "permissions violation"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("%d lines for two errors: %q", n, out)
	}
}
