package server

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
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
