package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// writePair writes a new self-signed pair for host into dir and returns it.
func writePair(t *testing.T, dir, host string) {
	t.Helper()
	crt, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCertFilesReload: a renewed pair is served after the reload period
// without a restart; a broken one is logged and the previous pair kept.
func TestCertFilesReload(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	var logs strings.Builder
	c, err := loadCertFiles(dir, funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	served := func() string {
		t.Helper()
		cert, err := c.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	if got := served(); !strings.HasPrefix(got, "first") {
		t.Fatalf("serving %q, want the first pair", got)
	}
	writePair(t, dir, "second")
	now = now.Add(time.Second)
	first := served() // within the period since the last reread (at the first handshake)
	now = now.Add(certReloadEvery)
	if got := served(); !strings.HasPrefix(got, "second") {
		t.Errorf("after the reload period serving %q, want the renewed pair", got)
	}
	if !strings.HasPrefix(first, "first") {
		t.Errorf("within the reload period serving %q, want the first pair still", first)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(certReloadEvery)
	if got := served(); !strings.HasPrefix(got, "second") {
		t.Errorf("with a broken pair on disk serving %q, want the previous pair", got)
	}
	if !strings.Contains(logs.String(), "cannot load the renewed metrics TLS certificate") {
		t.Errorf("the broken pair is not logged: %s", logs.String())
	}
	if _, err := loadCertFiles(t.TempDir(), funcr.New(func(string, string) {}, funcr.Options{})); err == nil {
		t.Error("an empty directory loads")
	}
}

// TestServesCertDirPair: the secure server answers a real TLS handshake
// with the pair in CertDir (served through GetCertificate).
func TestServesCertDirPair(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "served")
	srv, err := New(Options{Gatherer: prometheus.NewRegistry(), Ready: new(atomic.Bool), Secure: true, CertDir: dir,
		Auth: &rest.Config{Host: "https://127.0.0.1:1"}, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // the test reads the certificate itself
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; !strings.HasPrefix(cn, "served") {
		t.Errorf("served certificate %q, want the pair of CertDir", cn)
	}
}
