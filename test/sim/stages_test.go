package sim

import (
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// The stage oracle judges what a delivery page says of where the delay is
// against the fault behind it, only where one stage's faults are active
// and the servers' metrics are scraped; an API server cut off etcd is the
// stage of the resources whose informers' connection it held, unless the
// head probe's or the canary's was on it too.
func TestTheStageOracleJudgesWhereAPageSaysTheDelayIs(t *testing.T) {
	const (
		cacheOf1 = "Where: the watch cache of API server apiserver-1:6443, 7m 45s behind etcd (stage etcd_to_cache, from watch_cache_rv)."
		cacheOf0 = "Where: the watch cache of API server apiserver-0:6443, 7m 45s behind etcd (stage etcd_to_cache, from watch_cache_rv)."
		between  = "Where: between the API servers' watch cache and the client (the server's dispatch to watchers, or the network), 2m 45s (stage cache_to_client, from remainder)."
	)
	stuck := Fault{Kind: Stuck, Start: 20 * time.Minute, Dur: 30 * time.Minute, Server: 1, Resource: resConfigMaps.Name()}
	frozen := Fault{Kind: Freeze, Start: 20 * time.Minute, Dur: 30 * time.Minute, Host: HostInformers}
	restart := Fault{Kind: Restart, Start: 25 * time.Minute, Dur: 30 * time.Second, Server: 0}
	cutoff := Fault{Kind: Cutoff, Start: 20 * time.Minute, Dur: 15 * time.Minute, Server: 1}
	// the informers' connection on API server 1, the head probe's and the
	// canary's on 0; elsewhere, the informers' on 0 too
	placed := map[string][]int{HostInformers: {1}, HostProbe: {0}, HostCanary: {0}}
	elsewhere := map[string][]int{HostInformers: {0}, HostProbe: {0}, HostCanary: {0}}
	page := func(alert, description string) Firing {
		return Firing{Alert: alert, Resource: resConfigMaps.Name(), Severity: slo.DefaultSeverityPage, From: 30 * time.Minute, To: 40 * time.Minute, Description: "Its cache is stale. " + description}
	}
	for _, tc := range []struct {
		name       string
		metrics    bool
		http1      bool
		routes     map[string][]int
		faults     []Fault
		fired      Firing
		judged     int
		violations []string
	}{
		{"a stuck cache, named", true, false, placed, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", cacheOf1), 1, nil},
		{"a stuck cache, another server's named", true, false, placed, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", cacheOf0), 1, []string{"wrong stage"}},
		{"a stuck cache, another stage named", true, false, placed, []Fault{stuck}, page("RvsyncWatchStalled", between), 1, []string{"wrong stage"}},
		{"a stuck cache, no stage named", true, false, placed, []Fault{stuck}, page("RvsyncCanaryDeliveryBudgetBurn", ""), 1, []string{"stage unnamed"}},
		{"a frozen connection, named", true, false, placed, []Fault{frozen}, page("RvsyncResourceVersionLagBudgetBurn", between), 1, nil},
		{"a frozen connection, a cache named", true, false, placed, []Fault{frozen}, page("RvsyncCacheStalenessBudgetBurn", cacheOf1), 1, []string{"wrong stage"}},
		{"two stages at once", true, false, placed, []Fault{stuck, frozen}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"a restart in the window", true, false, placed, []Fault{stuck, restart}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"no servers' metrics", false, false, placed, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"not a delivery page", true, false, placed, []Fault{stuck}, page("RvsyncListLatencyBudgetBurn", ""), 0, nil},
		{"a fault over before the window", true, false, placed, []Fault{{Kind: Stuck, Start: time.Minute, Dur: 5 * time.Minute, Server: 1, Resource: resConfigMaps.Name()}}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"a server cut off etcd, the informers' named", true, false, placed, []Fault{cutoff}, page("RvsyncWatchStalled", cacheOf1), 1, nil},
		{"a server cut off etcd, another server's named", true, false, placed, []Fault{cutoff}, page("RvsyncWatchStalled", cacheOf0), 1, []string{"wrong stage"}},
		{"a server cut off etcd, another stage named", true, false, placed, []Fault{cutoff}, page("RvsyncCacheStalenessBudgetBurn", between), 1, []string{"wrong stage"}},
		{"a server cut off etcd, the informers elsewhere", true, false, elsewhere, []Fault{cutoff}, page("RvsyncCacheStalenessBudgetBurn", between), 0, nil},
		{"a server cut off etcd, the head probe's", true, false, placed, []Fault{{Kind: Cutoff, Start: 20 * time.Minute, Dur: 15 * time.Minute}}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"a server cut off etcd, a connection elsewhere frozen", true, false, elsewhere, []Fault{cutoff, frozen}, page("RvsyncCacheStalenessBudgetBurn", between), 1, nil},
		{"a server cut off etcd, on HTTP/1.1", true, true, placed, []Fault{cutoff}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := History{Duration: time.Hour, Setup: Setup{Servers: 2, ServerMetrics: tc.metrics, HTTP1: tc.http1, Canary: resConfigMaps.Name(), Resources: []Watched{resConfigMaps}}, Faults: tc.faults}
			var scrapes []Scrape
			for at := time.Duration(0); at <= time.Hour; at += 15 * time.Second {
				scrapes = append(scrapes, Scrape{At: epoch.Add(at), Routes: tc.routes})
			}
			v := CheckStages(h, scrapes, []Firing{tc.fired})
			var rules []string
			for _, x := range v.Violations {
				rules = append(rules, x.Rule)
			}
			if v.Judged != tc.judged || len(rules) != len(tc.violations) || (len(rules) > 0 && rules[0] != tc.violations[0]) {
				t.Errorf("judged %d, violations %q (%v); want %d judged, %q", v.Judged, rules, v.Violations, tc.judged, tc.violations)
			}
		})
	}
}
