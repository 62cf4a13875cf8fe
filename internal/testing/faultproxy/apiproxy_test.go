package faultproxy

import (
	"bufio"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// apiRig is an upstream that answers lists with "list" and watches with an
// event every 10ms, behind an APIProxy.
type apiRig struct {
	t      *testing.T
	proxy  *APIProxy
	client *http.Client
	base   string
}

func newAPIRig(t *testing.T) *apiRig {
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isWatch(r) {
			fmt.Fprintln(w, "list")
			return
		}
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	cas := x509.NewCertPool()
	cas.AddCert(upstream.Certificate())
	p, err := StartAPIProxy("127.0.0.1:0", u, cas, upstream.TLS.Certificates[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// the upstream's client trusts the certificate the proxy serves too
	return &apiRig{t: t, proxy: p, client: upstream.Client(), base: "https://" + p.Addr()}
}

// watch opens a watch of path through the proxy and returns a function
// that waits up to a duration for its next event.
func (r *apiRig) watch(path string) func(time.Duration) (string, bool) {
	r.t.Helper()
	resp, err := r.client.Get(r.base + path + "?watch=true")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { resp.Body.Close() })
	events := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()
	next := func(within time.Duration) (string, bool) {
		select {
		case e, ok := <-events:
			return e, ok
		case <-time.After(within):
			return "", false
		}
	}
	if _, ok := next(10 * time.Second); !ok {
		r.t.Fatalf("no event of %s through the proxy", path)
	}
	return next
}

func (r *apiRig) list() string {
	r.t.Helper()
	resp, err := r.client.Get(r.base + "/api/v1/configmaps?limit=1")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// drain reads what passed the gate before a stall took hold, until 300 ms
// pass without an event (a broken stall keeps streaming: bounded at 10 s,
// the check after it then fails). A count of 20, until 6 December,
// returned while events sent before the stall still arrived on a loaded
// machine, and the next was taken for one the stall let by.
func drain(next func(time.Duration) (string, bool)) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, ok := next(300 * time.Millisecond); !ok {
			return
		}
	}
}

// TestAPIProxyStallsWatchesOnly: through the proxy a watch streams events
// and a list answers; StallWatches holds the watch's events while lists
// still answer; Release lets the held events flow.
func TestAPIProxyStallsWatchesOnly(t *testing.T) {
	r := newAPIRig(t)
	next := r.watch("/api/v1/configmaps")
	r.proxy.StallWatches()
	drain(next)
	if got := r.list(); got != "list\n" {
		t.Errorf("a list during the stall: %q", got)
	}
	if e, ok := next(500 * time.Millisecond); ok {
		t.Errorf("an event during the stall: %s", e)
	}
	r.proxy.Release()
	if _, ok := next(10 * time.Second); !ok {
		t.Error("no event after the release")
	}
	if n := r.proxy.Watches(); n != 1 {
		t.Errorf("Watches() = %d, want 1", n)
	}
}

// TestAPIProxyStallsOneResource: StallWatchesOf holds the watches of one
// resource while another resource's watch streams on, and holds a watch of
// it opened after the call too.
func TestAPIProxyStallsOneResource(t *testing.T) {
	r := newAPIRig(t)
	configMaps := r.watch("/api/v1/namespaces/ns/configmaps")
	namespaces := r.watch("/api/v1/namespaces")
	r.proxy.StallWatchesOf("configmaps")
	drain(configMaps)
	if e, ok := configMaps(500 * time.Millisecond); ok {
		t.Errorf("a stalled configmaps event: %s", e)
	}
	if _, ok := namespaces(2 * time.Second); !ok {
		t.Error("the namespaces watch stalled with configmaps")
	}
	// a watch opened during the stall: not even its headers pass the gate
	got := make(chan struct{})
	go func() {
		resp, err := r.client.Get(r.base + "/api/v1/configmaps?watch=true")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		b := make([]byte, 1)
		if _, err := resp.Body.Read(b); err == nil {
			close(got)
		}
	}()
	select {
	case <-got:
		t.Error("a configmaps watch opened during the stall streamed")
	case <-time.After(500 * time.Millisecond):
	}
	r.proxy.Release()
	if _, ok := configMaps(10 * time.Second); !ok {
		t.Error("no configmaps event after the release")
	}
}

// TestAPIProxyOpenWatches: the proxy names the resources whose watches it
// serves, with the oldest one's start, and forgets a watch once it ends.
func TestAPIProxyOpenWatches(t *testing.T) {
	r := newAPIRig(t)
	before := time.Now()
	r.watch("/api/v1/namespaces/ns/configmaps")
	resp, err := r.client.Get(r.base + "/api/v1/namespaces?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	r.list()
	open := r.proxy.OpenWatches()
	if len(open) != 2 || open["configmaps"].Before(before) || open["namespaces"].Before(open["configmaps"]) {
		t.Errorf("open watches %v, want configmaps and then namespaces, since %v", open, before)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(r.proxy.OpenWatches()) != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if open := r.proxy.OpenWatches(); len(open) != 1 || open["configmaps"].IsZero() {
		t.Errorf("after the namespaces watch ended: %v", open)
	}
}
