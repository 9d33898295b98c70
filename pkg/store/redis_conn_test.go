package store

import (
	"context"
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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// roundTrip records and reads back fingerprints in a few partitions, so
// every shard of a ring is used.
func roundTrip(t *testing.T, s *Redis) {
	t.Helper()
	ctx := context.Background()
	for p := range 8 {
		if err := s.Record(ctx, p, []uint64{uint64(p) + 1}); err != nil {
			t.Fatalf("record in partition %d: %v", p, err)
		}
		seen, err := s.Seen(ctx, p, []uint64{uint64(p) + 1, 999})
		if err != nil || !seen[0] || seen[1] {
			t.Fatalf("partition %d: seen %v, %v", p, seen, err)
		}
	}
}

const testRedisPassword = "pa:ss@w/rd" // characters a URL would need escaped

// An address where nothing listens is named, with what to do.
func TestRedisNobodyThere(t *testing.T) {
	addr := testutil.ClosedAddr(t)
	_, err := OpenRedis(context.Background(), []string{addr}, false, "none")
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "start Redis there, or point --redis at a running one") {
		t.Errorf("OpenRedis(%s) = %v; want the address and what to do", addr, err)
	}
}

func TestRedisPassword(t *testing.T) {
	ctx := context.Background()
	port := testredis.FreePort(t)
	a := testredis.StartRaw(t, port, "--port", strconv.Itoa(port), "--requirepass", testRedisPassword)
	port2 := testredis.FreePort(t)
	b := testredis.StartRaw(t, port2, "--port", strconv.Itoa(port2), "--requirepass", testRedisPassword)

	for _, addrs := range [][]string{{a}, {a, b}} {
		if _, err := OpenRedis(ctx, addrs, false, "auth"); err == nil || !strings.Contains(err.Error(), "NOAUTH") ||
			!strings.Contains(err.Error(), "set TRAWLER_REDIS_PASSWORD") {
			t.Errorf("%v without a password: %v, want NOAUTH and what to do", addrs, err)
		}
		if _, err := OpenRedis(ctx, addrs, false, "auth", WithRedisAuth("", "wrong")); err == nil ||
			!strings.Contains(err.Error(), "set TRAWLER_REDIS_PASSWORD") {
			t.Errorf("%v with a wrong password: %v, want what to do", addrs, err)
		}
		s, err := OpenRedis(ctx, addrs, false, "auth", WithRedisAuth("", testRedisPassword))
		if err != nil {
			t.Fatalf("%v with the password: %v", addrs, err)
		}
		roundTrip(t, s)
		s.Close()
	}
}

func TestRedisTLS(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pool := writeTestCerts(t, dir)
	port := testredis.FreePort(t)
	addr := testredis.StartRaw(t, port, "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.crt"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"), "--tls-auth-clients", "no",
		"--requirepass", testRedisPassword)
	auth := WithRedisAuth("", testRedisPassword)

	if _, err := OpenRedis(ctx, []string{addr}, false, "tls", auth); err == nil {
		t.Error("plain TCP to a TLS port: no error")
	}
	// The server's CA is not among the system roots: verification fails.
	if _, err := OpenRedis(ctx, []string{addr}, false, "tls", auth, WithRedisTLS(&tls.Config{})); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("TLS against an unknown CA: %v, want a certificate error", err)
	}
	s, err := OpenRedis(ctx, []string{addr}, false, "tls", auth, WithRedisTLS(&tls.Config{RootCAs: pool}))
	if err != nil {
		t.Fatalf("TLS with the CA: %v", err)
	}
	defer s.Close()
	roundTrip(t, s)
}

// writeTestCerts writes ca.crt, server.crt and server.key (for 127.0.0.1)
// into dir and returns a pool holding the CA.
func writeTestCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey, srvKey := newKey(), newKey()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trawler test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write("ca.crt", "CERTIFICATE", caDER)
	write("server.crt", "CERTIFICATE", srvDER)
	write("server.key", "EC PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool
}
