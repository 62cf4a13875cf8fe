package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// With Setup.ServerMetrics the rules see each API server's watch caches
// as kube-prometheus-stack's apiserver job scrapes them: a cache that
// stops following etcd stands at its RV on its own instance while the
// other server's moves on with the writes (#42: the stage of a delay is
// read from them).
func TestTheAPIServersWatchCachesAreScraped(t *testing.T) {
	setup := Setup{Servers: 2, ServerMetrics: true, Resources: []Watched{resConfigMaps, resDeploys}}
	var start time.Time
	var scrapes []Scrape
	script := func(w *World) {
		start = w.Start
		for i := range 40 {
			w.Cluster.At(start.Add(time.Duration(10+5*i)*time.Second), func(tx *model.Tx) {
				tx.Create(resConfigMaps.Name(), LoadNamespace, fmt.Sprintf("obj-%d", i), nil)
			})
		}
		w.Cluster.At(start.Add(100*time.Second), func(tx *model.Tx) { tx.StickCache(1, resConfigMaps.Name(), true) })
	}
	if err := Run(t, setup, 1, 4*time.Minute, script, func(s Scrape) { scrapes = append(scrapes, s) }); err != nil {
		t.Fatal(err)
	}
	last := scrapes[len(scrapes)-1]
	if len(last.Servers) != 2 {
		t.Fatalf("%d API servers scraped, want 2", len(last.Servers))
	}
	var stuckAt uint64
	for _, s := range scrapes {
		if s.At.Sub(start) > 105*time.Second && stuckAt == 0 {
			stuckAt = s.Servers[1].CacheRV[resConfigMaps.Name()]
		}
	}
	following, stuck := last.Servers[0].CacheRV[resConfigMaps.Name()], last.Servers[1].CacheRV[resConfigMaps.Name()]
	if stuck != stuckAt || following <= stuck+20 {
		t.Errorf("configmaps' caches at the end: %d on the server that follows, %d on the stuck one (%d when it stuck); want the stuck one standing 20+ writes behind", following, stuck, stuckAt)
	}

	// stored as Prometheus stores the apiserver job's scrape
	db, err := tsdb.Open(filepath.Join(t.TempDir(), "tsdb"), nil, nil, tsdb.DefaultOptions(), tsdb.NewDBStats())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := appendScrapes(db, scrapes); err != nil {
		t.Fatal(err)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	for _, tc := range []struct {
		query string
		want  float64
	}{
		{`apiserver_watch_cache_resource_version{job="apiserver", instance="apiserver-1:6443", group="", resource="configmaps"}`, float64(stuck)},
		{`apiserver_watch_cache_resource_version{job="apiserver", instance="apiserver-0:6443", group="", resource="configmaps"}`, float64(following)},
		{`count(apiserver_watch_cache_resource_version{job="apiserver", group="apps", resource="deployments"})`, 2},
		{`sum(up{job="apiserver"})`, 2},
	} {
		q, err := engine.NewInstantQuery(context.Background(), db, nil, tc.query, last.At)
		if err != nil {
			t.Fatal(err)
		}
		v, err := q.Exec(context.Background()).Vector()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 1 || v[0].F != tc.want {
			t.Errorf("%s = %v, want %v", tc.query, v, tc.want)
		}
	}
}
