package server

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// Options configure the exporter's HTTP server.
type Options struct {
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// Ready is set once the configuration resolved and the informers started.
	Ready *atomic.Bool
	// Secure serves /metrics over TLS to scrapers allowed by a TokenReview
	// and a SubjectAccessReview made with Auth; CertDir holds tls.crt and
	// tls.key (empty: a self-signed pair).
	Secure  bool
	CertDir string
	Auth    *rest.Config
	Logger  logr.Logger
}

// New returns the exporter's HTTP server; with a TLSConfig when secure (serve
// it with ServeTLS(ln, "", "")).
func New(o Options) (*http.Server, error) {
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	var guard func(http.Handler) (http.Handler, error)
	if o.Secure {
		var err error
		srv.TLSConfig, guard, err = secureServing(o.Auth, o.CertDir, o.Logger)
		if err != nil {
			return nil, err
		}
	}
	mux, err := newMux(o.Gatherer, o.Ready, guard)
	if err != nil {
		return nil, err
	}
	srv.Handler = mux
	return srv, nil
}

// newMux serves /metrics from gatherer (through guard, when not nil: the
// authentication and authorization filter), /healthz (the process answers)
// and /readyz (the configuration resolved and the informers started).
// Readiness does not follow the API server's health on purpose: an exporter
// that went unready when the API server failed would hide the very outage it
// reports.
func newMux(gatherer prometheus.Gatherer, ready *atomic.Bool, guard func(http.Handler) (http.Handler, error)) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	var metrics http.Handler = promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		Timeout:             10 * time.Second,
		MaxRequestsInFlight: 10,
	})
	if guard != nil {
		var err error
		if metrics, err = guard(metrics); err != nil {
			return nil, err
		}
	}
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "informers not started yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`<html><head><title>rvsync exporter</title></head><body><h1>rvsync exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>`))
	})
	return mux, nil
}

// secureServing returns the TLS configuration and the /metrics guard of
// secure serving: TLS with the key pair in certDir (tls.crt, tls.key,
// reloaded when renewed, see certFiles) or a self-signed one, and scrapeAuth, which authenticates each scrape's bearer
// token with a TokenReview and authorizes `get` on the non-resource URL
// /metrics with a SubjectAccessReview.
func secureServing(c *rest.Config, certDir string, log logr.Logger) (*tls.Config, func(http.Handler) (http.Handler, error), error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if certDir != "" {
		files, err := loadCertFiles(certDir, log)
		if err != nil {
			return nil, nil, fmt.Errorf("metrics TLS certificate: %w", err)
		}
		tlsConfig.GetCertificate = files.GetCertificate
	} else {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("rvsync-exporter", nil, []string{"localhost"})
		if err != nil {
			return nil, nil, fmt.Errorf("metrics TLS certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("metrics TLS certificate: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	auth := newScrapeAuth(client, log)
	guard := func(h http.Handler) (http.Handler, error) { return auth.wrap(h), nil }
	return tlsConfig, guard, nil
}
