package server

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// certReloadEvery bounds how often a handshake rereads the certificate
// files: cert-manager renews well ahead of expiry, so seconds of delay
// cost nothing, and rereading two small files that often costs nothing.
const certReloadEvery = 10 * time.Second

// certFiles serves the key pair in a directory (tls.crt, tls.key, as a
// kubernetes.io/tls Secret mounts it) and picks up a renewed pair
// (cert-manager rotation, which swaps the mounted files) without a
// restart: a handshake rereads the files at most every certReloadEvery and
// switches when they changed. A pair that does not load (half written,
// mismatched) is logged and the previous one kept.
type certFiles struct {
	dir   string
	log   logr.Logger
	now   func() time.Time
	every time.Duration

	mu       sync.Mutex
	cert     *tls.Certificate
	crt, key []byte    // the bytes cert was made of
	checked  time.Time // last reread
}

// loadCertFiles loads the pair in dir; an error is a configuration error.
func loadCertFiles(dir string, log logr.Logger) (*certFiles, error) {
	c := &certFiles{dir: dir, log: log, now: time.Now, every: certReloadEvery}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the files and switches to them when they changed.
func (c *certFiles) reload() error {
	crt, err := os.ReadFile(filepath.Join(c.dir, "tls.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(c.dir, "tls.key"))
	if err != nil {
		return err
	}
	if c.cert != nil && bytes.Equal(crt, c.crt) && bytes.Equal(key, c.key) {
		return nil
	}
	cert, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return fmt.Errorf("%s: tls.crt and tls.key: %w", c.dir, err)
	}
	if c.cert != nil {
		c.log.Info("metrics TLS certificate renewed: serving the new key pair", "dir", c.dir)
	}
	c.cert, c.crt, c.key = &cert, crt, key
	return nil
}

// GetCertificate is tls.Config.GetCertificate.
func (c *certFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= c.every {
		c.checked = now
		if err := c.reload(); err != nil {
			c.log.Error(err, "cannot load the renewed metrics TLS certificate; serving the previous one")
		}
	}
	return c.cert, nil
}
