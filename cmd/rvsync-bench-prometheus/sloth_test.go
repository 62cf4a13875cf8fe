package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// withSLO returns a copy of DefaultSpec with the SLO named name changed by f.
func withSLO(name string, f func(*slo.SLO)) slo.Spec {
	s := slo.DefaultSpec()
	s.SLOs = slices.Clone(s.SLOs)
	for i := range s.SLOs {
		if s.SLOs[i].Name == name {
			f(&s.SLOs[i])
		}
	}
	return s
}

// parseSlothSpec reads slothSpec's output back, by SLO name.
func parseSlothSpec(t *testing.T, b []byte) map[string]slothSLO {
	t.Helper()
	var f slothSpecFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if f.Version != "prometheus/v1" || f.Service != slothService {
		t.Errorf("version %q, service %q; want prometheus/v1, %s", f.Version, f.Service, slothService)
	}
	byName := map[string]slothSLO{}
	for _, o := range f.SLOs {
		byName[o.Name] = o
	}
	return byName
}

func TestSlothSpecCarriesTheSpec(t *testing.T) {
	type want struct {
		objective float64
		error     []string // in the error query
		absent    []string // not in it
	}
	selector := slo.DefaultSpec()
	selector.Selector = `job="rvsync"`
	selector.ClusterLabel = "k8s_cluster"
	for _, tc := range []struct {
		name string
		spec slo.Spec
		want map[string]want
	}{
		{"defaults", slo.DefaultSpec(), map[string]want{
			slo.RVLag:          {objective: 99, error: []string{"rvsync_resource_version_lag > bool 500)"}},
			slo.ListLatency:    {objective: 95, error: []string{`le="1.5"`, `kind=~"list|probe"`, `result="success"`, `result!="not_found"`}},
			slo.CacheStaleness: {objective: 99, error: []string{"rvsync_cache_staleness_seconds > bool 30)"}},
		}},
		{"RV-lag threshold and objective", withSLO(slo.RVLag, func(o *slo.SLO) { o.Threshold, o.Objective = 700, 0.999 }), map[string]want{
			slo.RVLag: {objective: 99.9, error: []string{"> bool 700)"}, absent: []string{"500"}},
		}},
		{"List-latency threshold and objective", withSLO(slo.ListLatency, func(o *slo.SLO) { o.Threshold, o.Objective = 2.5, 0.9 }), map[string]want{
			slo.ListLatency: {objective: 90, error: []string{`le="2.5"`}, absent: []string{`le="1.5"`}},
		}},
		{"staleness threshold", withSLO(slo.CacheStaleness, func(o *slo.SLO) { o.Threshold = 45 }), map[string]want{
			slo.CacheStaleness: {objective: 99, error: []string{"> bool 45)"}, absent: []string{"30)"}},
		}},
		{"selector and cluster label", selector, map[string]want{
			slo.RVLag:          {objective: 99, error: []string{`rvsync_resource_version_lag{job="rvsync"}`, "sum by (k8s_cluster, resource)"}},
			slo.ListLatency:    {objective: 95, error: []string{`rvsync_list_duration_seconds_bucket{job="rvsync", `, "sum by (k8s_cluster, resource)"}},
			slo.CacheStaleness: {objective: 99, error: []string{`rvsync_cache_staleness_seconds{job="rvsync"}`, "sum by (k8s_cluster, resource)"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := slothSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := parseSlothSpec(t, out)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, slices.Sorted(slices.Values(slothSLOs))) {
				t.Errorf("SLOs %v, want %v", names, slothSLOs)
			}
			for name, w := range tc.want {
				o := got[name]
				if o.Objective != w.objective {
					t.Errorf("%s: objective %v, want %v", name, o.Objective, w.objective)
				}
				for _, q := range []string{o.SLI.Events.ErrorQuery, o.SLI.Events.TotalQuery} {
					if strings.Count(q, slothWindowVar) == 0 {
						t.Errorf("%s: query without %s: %s", name, slothWindowVar, q)
					}
				}
				for _, s := range w.error {
					if !strings.Contains(o.SLI.Events.ErrorQuery, s) {
						t.Errorf("%s: error query lacks %q: %s", name, s, o.SLI.Events.ErrorQuery)
					}
				}
				for _, s := range w.absent {
					if strings.Contains(o.SLI.Events.ErrorQuery, s) {
						t.Errorf("%s: error query holds %q: %s", name, s, o.SLI.Events.ErrorQuery)
					}
				}
			}
		})
	}
}

func TestSlothSpecRefusesWhatSlothCannotMatch(t *testing.T) {
	otherWindows := slo.DefaultSpec()
	otherWindows.Windows = slices.Clone(otherWindows.Windows)
	otherWindows.Windows[0].Factor = 10
	period := slo.DefaultSpec()
	period.BudgetPeriod = "28d"
	for _, tc := range []struct {
		name string
		spec slo.Spec
		want string // in the error
	}{
		{"other factor", otherWindows, "burn-rate windows"},
		{"28-day budget", period, "budget period 28d"},
		{"scaled windows", slo.DefaultSpec().ScaledWindows(1.0 / 60), "window scale"},
		{"disabled SLO", withSLO(slo.CacheStaleness, func(o *slo.SLO) { o.Disabled = true }), "cache-staleness is disabled"},
		{"invalid spec", withSLO(slo.ListLatency, func(o *slo.SLO) { o.Threshold = 2 }), "not a bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := slothSpec(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
