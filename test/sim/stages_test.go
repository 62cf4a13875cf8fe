package sim

import (
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// The stage oracle judges what a delivery page says of where the delay is
// against the fault behind it, only where one stage's faults are active
// and the servers' metrics are scraped.
func TestTheStageOracleJudgesWhereAPageSaysTheDelayIs(t *testing.T) {
	const (
		cacheOf1 = "Where: the watch cache of API server apiserver-1:6443, 7m 45s behind etcd (stage etcd_to_cache, from watch_cache_rv)."
		cacheOf0 = "Where: the watch cache of API server apiserver-0:6443, 7m 45s behind etcd (stage etcd_to_cache, from watch_cache_rv)."
		between  = "Where: between the API servers' watch cache and the client (the server's dispatch to watchers, or the network), 2m 45s (stage cache_to_client, from remainder)."
	)
	stuck := Fault{Kind: Stuck, Start: 20 * time.Minute, Dur: 30 * time.Minute, Server: 1, Resource: resConfigMaps.Name()}
	frozen := Fault{Kind: Freeze, Start: 20 * time.Minute, Dur: 30 * time.Minute, Host: HostInformers}
	restart := Fault{Kind: Restart, Start: 25 * time.Minute, Dur: 30 * time.Second, Server: 0}
	page := func(alert, description string) Firing {
		return Firing{Alert: alert, Resource: resConfigMaps.Name(), Severity: slo.DefaultSeverityPage, From: 30 * time.Minute, To: 40 * time.Minute, Description: "Its cache is stale. " + description}
	}
	for _, tc := range []struct {
		name       string
		metrics    bool
		faults     []Fault
		fired      Firing
		judged     int
		violations []string
	}{
		{"a stuck cache, named", true, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", cacheOf1), 1, nil},
		{"a stuck cache, another server's named", true, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", cacheOf0), 1, []string{"wrong stage"}},
		{"a stuck cache, another stage named", true, []Fault{stuck}, page("RvsyncWatchStalled", between), 1, []string{"wrong stage"}},
		{"a stuck cache, no stage named", true, []Fault{stuck}, page("RvsyncCanaryDeliveryBudgetBurn", ""), 1, []string{"stage unnamed"}},
		{"a frozen connection, named", true, []Fault{frozen}, page("RvsyncResourceVersionLagBudgetBurn", between), 1, nil},
		{"a frozen connection, a cache named", true, []Fault{frozen}, page("RvsyncCacheStalenessBudgetBurn", cacheOf1), 1, []string{"wrong stage"}},
		{"two stages at once", true, []Fault{stuck, frozen}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"a restart in the window", true, []Fault{stuck, restart}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"no servers' metrics", false, []Fault{stuck}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
		{"not a delivery page", true, []Fault{stuck}, page("RvsyncListLatencyBudgetBurn", ""), 0, nil},
		{"a fault over before the window", true, []Fault{{Kind: Stuck, Start: time.Minute, Dur: 5 * time.Minute, Server: 1, Resource: resConfigMaps.Name()}}, page("RvsyncCacheStalenessBudgetBurn", ""), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := History{Duration: time.Hour, Setup: Setup{Servers: 2, ServerMetrics: tc.metrics, Resources: []Watched{resConfigMaps}}, Faults: tc.faults}
			v := CheckStages(h, []Firing{tc.fired})
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
