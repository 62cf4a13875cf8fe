package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
	gate    *gate
	watches atomic.Int64
}

// StartAPIProxy listens on listen (host:port; port 0 picks one) and
// forwards to the API server at upstream, whose serving certificate
// upstreamCAs verify.
func StartAPIProxy(listen string, upstream *url.URL, upstreamCAs *x509.CertPool, serving tls.Certificate) (*APIProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &APIProxy{ln: ln, gate: newGate()}
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
				w = &gatedWriter{ResponseWriter: w, gate: p.gate}
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

// Addr is the proxy's listening address (host:port).
func (p *APIProxy) Addr() string { return p.ln.Addr().String() }

// Watches counts the watch requests the proxy has seen: proof that a
// client's watches pass through it.
func (p *APIProxy) Watches() int64 { return p.watches.Load() }

// StallWatches stops every watch response, open and future, from sending
// more: events are held, connections and every other request carry on.
func (p *APIProxy) StallWatches() { p.gate.stall() }

// Release ends a stall; the held events flow on.
func (p *APIProxy) Release() { p.gate.release() }

// Close stops the proxy; open streams end.
func (p *APIProxy) Close() error {
	p.gate.close()
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
