package probe

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// An informer learns its connection's protocol from the answers on it: a
// freshness read over HTTP/1.1 (a pool of connections, each of which a
// load balancer may place on another API server) is not its own, and its
// proofs stop counting on it; over HTTP/2 (one connection) it is. Issue
// #39's first premise: behind a balancer, with the exporter's clients on
// HTTP/1.1, idle resources showed RV lag 10,363-11,103 on real API
// servers, and the simulation's corpus seed 4 (HTTP/1.1, three API
// servers) lag 6,428.
func TestFreshnessReadsOverHTTP1AreNotOwn(t *testing.T) {
	list := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42"},"items":[]}`))
	}
	for _, tc := range []struct {
		name  string
		http2 bool
		own   bool
	}{
		{"HTTP/1.1", false, false},
		{"HTTP/2", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(list))
			srv.EnableHTTP2 = tc.http2
			srv.StartTLS()
			t.Cleanup(srv.Close)
			cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			m := New(Options{})
			r := m.track(testGVR("configmaps"), "")
			in := r.newInformer()
			reads, err := newCollection(cfg, testGVR("configmaps"))
			if err != nil {
				t.Fatal(err)
			}
			reads.proto = in.observeProto
			m.freshenWith(in, reads.head, true)
			if !in.readsOwn() {
				t.Fatal("reads on the informer's own connection are not its own before any answer")
			}
			rv, err := in.hook().freshen(t.Context())
			if err != nil || rv != "42" {
				t.Fatalf("read: %q, %v", rv, err)
			}
			if got := in.readsOwn(); got != tc.own {
				t.Errorf("after an answer over %s: reads own %v, want %v", tc.name, got, tc.own)
			}
			if got := in.env(r.space.Load(), m.opts.Clock.Now()).OwnReads; got != tc.own {
				t.Errorf("after an answer over %s: the proofs count on its reads %v, want %v", tc.name, got, tc.own)
			}
		})
	}
}
