package scrape

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A scrape polled until a target answers must reach the target as it is at
// that poll: a connection kept alive from an earlier poll can lead elsewhere.
// A ClusterIP dialled before kube-proxy programmed its rule goes out by the
// default route (here, an egress proxy answering 404 to everything); the
// connection keeps that path after the rule lands, so a kept-alive
// connection answers 404 for as long as it is reused. Each scrape dials anew.
func TestEachScrapeDialsANewConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	for i := range 3 {
		m, err := Scrape(srv.URL + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d: %v", i, err)
		}
		if m["up"] == nil {
			t.Fatalf("scrape %d: no up in %v", i, m)
		}
	}
	if got := conns.Load(); got != 3 {
		t.Errorf("3 scrapes opened %d connections, want 3 (one each)", got)
	}
}
