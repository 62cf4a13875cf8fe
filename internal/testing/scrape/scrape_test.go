package scrape

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// LabelValue reads the state a one-hot family sets and the space an info
// series names, and nothing from a series that is not set or not asked.
func TestLabelValue(t *testing.T) {
	text := `# TYPE rvsync_resource_state gauge
rvsync_resource_state{resource="events",state="ok"} 0
rvsync_resource_state{resource="events",state="ahead_of_head"} 1
rvsync_resource_state{resource="pods",state="ok"} 1
# TYPE rvsync_resource_info gauge
rvsync_resource_info{resource="events",space="events"} 1
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		family, resource, label, want string
		ok                            bool
	}{
		{"rvsync_resource_state", "events", "state", "ahead_of_head", true},
		{"rvsync_resource_state", "pods", "state", "ok", true},
		{"rvsync_resource_info", "events", "space", "events", true},
		{"rvsync_resource_info", "pods", "space", "", false},
		{"rvsync_absent", "events", "space", "", false},
	} {
		got, ok := Metrics(m).LabelValue(c.family, map[string]string{"resource": c.resource}, c.label)
		if got != c.want || ok != c.ok {
			t.Errorf("%s{resource=%q} %s: %q, %v; want %q, %v", c.family, c.resource, c.label, got, ok, c.want, c.ok)
		}
	}
}

// Families keeps only the asked families of a kube-apiserver's exposition:
// not a family whose name the asked one begins, and not the HELP lines,
// whose text may be anything; a gauge in exponent form reads exactly.
func TestFamilies(t *testing.T) {
	text := `# HELP apiserver_watch_cache_resource_version [ALPHA] Current resource version of watch cache broken by resource type.
# TYPE apiserver_watch_cache_resource_version gauge
apiserver_watch_cache_resource_version{group="",resource="configmaps"} 1.234567e+06
apiserver_watch_cache_resource_version{group="apps",resource="deployments"} 316
# TYPE apiserver_watch_cache_resource_version_other gauge
apiserver_watch_cache_resource_version_other{group="",resource="configmaps"} 1
# TYPE up gauge
up 1
`
	m, err := Families([]byte(text), "apiserver_watch_cache_resource_version", "up")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Errorf("families %v, want the two asked", m)
	}
	if v, ok := m.Value("apiserver_watch_cache_resource_version", map[string]string{"group": "", "resource": "configmaps"}); !ok || v != 1234567 {
		t.Errorf("configmaps' cache RV %v (%v), want 1234567", v, ok)
	}
	if v, ok := m.Value("up", nil); !ok || v != 1 {
		t.Errorf("up %v (%v), want 1", v, ok)
	}
}
