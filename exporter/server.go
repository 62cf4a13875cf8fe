package exporter

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMux serves /metrics from gatherer, /healthz (the process answers) and
// /readyz (the configuration resolved and the informers started). Readiness
// does not follow the API server's health on purpose: an exporter that went
// unready when the API server failed would hide the very outage it reports.
func newMux(gatherer prometheus.Gatherer, ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		Timeout:             10 * time.Second,
		MaxRequestsInFlight: 10,
	}))
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
	return mux
}
