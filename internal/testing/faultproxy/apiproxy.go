package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"sync"
	"sync/atomic"
	"time"
)

// APIProxy is an HTTPS reverse proxy in front of kube-apiserver that can
// stall watches while every other request flows: the fault of a watch
// stream that stops delivering while its connection, and the client's
// other requests, stay healthy. The TCP Proxy cannot single out a watch
// once clients share connections (a pod's in-cluster clients all dial one
// Service address); at the HTTP layer a watch is a request with watch=true.
//
// It terminates TLS with a certificate the clients trust (for a pod: one
// the cluster CA signed for the kubernetes Service's IP) and forwards each
// request with its own credentials (the bearer token) over TLS to the API
// server, so authentication and authorization stay the API server's.
type APIProxy struct {
	ln      net.Listener
	srv     *http.Server
	watches atomic.Int64

	mu       sync.Mutex
	gates    map[string]*gate // by the watched resource, so one can be stalled alone
	stallAll bool             // StallWatches holds: new gates start stalled
	open     map[*http.Request]openWatch
}

// openWatch is a watch request the proxy is serving.
type openWatch struct {
	resource string
	since    time.Time
}

// StartAPIProxy listens on listen (host:port; port 0 picks one) and
// forwards to the API server at upstream, whose serving certificate
// upstreamCAs verify.
func StartAPIProxy(listen string, upstream *url.URL, upstreamCAs *x509.CertPool, serving tls.Certificate) (*APIProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &APIProxy{ln: ln, gates: map[string]*gate{}, open: map[*http.Request]openWatch{}}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: upstreamCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport: transport,
		// a watch is a stream: every event goes out as it arrives
		FlushInterval: -1,
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isWatch(r) {
				p.watches.Add(1)
				resource := watchedResource(r)
				w = &gatedWriter{ResponseWriter: w, gate: p.gateOf(resource)}
				p.mu.Lock()
				p.open[r] = openWatch{resource: resource, since: time.Now()}
				p.mu.Unlock()
				defer func() {
					p.mu.Lock()
					delete(p.open, r)
					p.mu.Unlock()
				}()
			}
			rp.ServeHTTP(w, r)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{serving}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	return p, nil
}

// isWatch reports whether r opens a watch (client-go's informers, their
// streaming watch-list included).
func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// watchedResource is the resource a watch request watches: the last
// element of its path ("configmaps" in /api/v1/namespaces/ns/configmaps).
func watchedResource(r *http.Request) string { return path.Base(r.URL.Path) }

// gateOf returns the gate of a resource's watches.
func (p *APIProxy) gateOf(resource string) *gate {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.gates[resource]
	if !ok {
		g = newGate()
		if p.stallAll {
			g.stall()
		}
		p.gates[resource] = g
	}
	return g
}

// Addr is the proxy's listening address (host:port).
func (p *APIProxy) Addr() string { return p.ln.Addr().String() }

// Watches counts the watch requests the proxy has seen: proof that a
// client's watches pass through it.
func (p *APIProxy) Watches() int64 { return p.watches.Load() }

// OpenWatches returns, for every resource with a watch open through the
// proxy now, when the oldest of them was opened: the ground truth of which
// resources' watches a stall holds.
func (p *APIProxy) OpenWatches() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Time{}
	for _, w := range p.open {
		if t, ok := out[w.resource]; !ok || w.since.Before(t) {
			out[w.resource] = w.since
		}
	}
	return out
}

// StallWatches stops every watch response, open and future, from sending
// more: events are held, connections and every other request carry on.
func (p *APIProxy) StallWatches() {
	p.mu.Lock()
	p.stallAll = true
	p.mu.Unlock()
	p.each(func(_ string, g *gate) { g.stall() })
}

// StallWatchesOf stalls the watches of the given resources only (plural
// names, e.g. "configmaps"), open and future.
func (p *APIProxy) StallWatchesOf(resources ...string) {
	for _, r := range resources {
		p.gateOf(r).stall()
	}
}

// Release ends every stall; the held events flow on.
func (p *APIProxy) Release() {
	p.mu.Lock()
	p.stallAll = false
	p.mu.Unlock()
	p.each(func(_ string, g *gate) { g.release() })
}

// each calls f on every gate; StallWatches also stalls the watches of
// resources not seen yet.
func (p *APIProxy) each(f func(string, *gate)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r, g := range p.gates {
		f(r, g)
	}
}

// Close stops the proxy; open streams end.
func (p *APIProxy) Close() error {
	p.each(func(_ string, g *gate) { g.close() })
	err := p.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// gatedWriter holds a response's body bytes at the gate.
type gatedWriter struct {
	http.ResponseWriter
	gate *gate
}

func (w *gatedWriter) Write(b []byte) (int, error) {
	if !w.gate.wait(time.Now()) {
		return 0, net.ErrClosed
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the reverse proxy flush the underlying writer.
func (w *gatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
