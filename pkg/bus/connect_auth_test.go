package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Issue 19 #3: a .creds file (user JWT and NKey seed, NATS decentralized
// auth) authenticates against a server that trusts the operator; a user of
// another account, or none, is refused.
func TestConnectWithCredsFile(t *testing.T) {
	dir := t.TempDir()
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(apub, ajwt); err != nil {
		t.Fatal(err)
	}
	url := startServer(t, func(o *server.Options) {
		o.TrustedKeys = []string{opub}
		o.AccountResolver = resolver
	})
	creds := func(name string, signer nkeys.KeyPair) string {
		ukp, _ := nkeys.CreateUser()
		upub, _ := ukp.PublicKey()
		ujwt, err := jwt.NewUserClaims(upub).Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := ukp.Seed()
		data, err := jwt.FormatUserConfig(ujwt, seed)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	nc, err := bus.Connect(url, t.Name(), bus.ConnectOptions{CredsFile: creds("user.creds", akp)})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	stranger, _ := nkeys.CreateAccount() // an account the operator never signed
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{CredsFile: creds("stranger.creds", stranger)}); err == nil {
		t.Error("a user of an unknown account connected")
	}
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{}); err == nil {
		t.Error("connected without credentials")
	}
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{CredsFile: filepath.Join(dir, "missing.creds")}); err == nil {
		t.Error("connected with a missing creds file")
	}
}

// Issue 19 #3: mutual TLS with --nats-tls-ca, --nats-tls-cert and
// --nats-tls-key; a client without a certificate, or with one its CA did
// not sign, is refused. Certificates for 127.0.0.1 only.
func TestConnectWithClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "trawler test CA")
	other := newTestCA(t, "someone else's CA")
	caFile := filepath.Join(dir, "ca.pem")
	writePEM(t, caFile, "CERTIFICATE", ca.der)
	serverCert := ca.issue(t, x509.ExtKeyUsageServerAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	url := startServer(t, func(o *server.Options) {
		o.TLS, o.TLSVerify = true, true
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	})
	url = strings.Replace(url, "nats://", "tls://", 1)
	clientFiles := func(name string, c *testCA) (string, string) {
		cert := c.issue(t, x509.ExtKeyUsageClientAuth)
		certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		writePEM(t, certFile, "CERTIFICATE", cert.Certificate[0])
		key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyFile, "PRIVATE KEY", key)
		return certFile, keyFile
	}
	cert, key := clientFiles("client", ca)
	nc, err := bus.Connect(url, t.Name(), bus.ConnectOptions{TLSCA: caFile, TLSCert: cert, TLSKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if !nc.TLSRequired() {
		t.Error("not over TLS")
	}
	nc.Close()
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{TLSCA: caFile}); err == nil {
		t.Error("connected without a client certificate")
	}
	cert, key = clientFiles("stranger", other)
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{TLSCA: caFile, TLSCert: cert, TLSKey: key}); err == nil {
		t.Error("connected with a certificate of another CA")
	}
	if _, err := bus.Connect(url, t.Name(), bus.ConnectOptions{TLSCert: cert, TLSKey: key}); err == nil {
		t.Error("trusted the server's certificate without --nats-tls-ca")
	}
}

type testCA struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, der: der, key: key}
}

// issue signs a certificate for 127.0.0.1 (loopback only).
func (c *testCA) issue(t *testing.T, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
