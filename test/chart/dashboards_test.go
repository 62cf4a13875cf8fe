//go:build integration

package chart_test

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rvsync-slo/rvsync-slo/dashboards"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// TestDashboardsFollowValues: the dashboards the chart ships are exactly
// the dashboards package's for the spec the values describe: the cluster
// label, the selector, every SLO's threshold and objective and the stall
// settings reach the threshold lines, the queries and the texts, as they
// reach the rules; the series carry a cluster label only when cluster.name
// or cluster.external says so, else the dashboards are the single-cluster
// ones (the cluster variable hidden); a disabled SLO's panels, table
// column and threshold lines are left out and the other panels laid out
// and numbered as the generator does.
func TestDashboardsFollowValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		spec   func(t *testing.T) slo.Spec
		single bool
	}{{
		name:   "defaults: no cluster label",
		spec:   func(*testing.T) slo.Spec { return slo.DefaultSpec() },
		single: true,
	}, {
		name:   "cluster label added by the ServiceMonitor",
		values: map[string]any{"cluster": map[string]any{"name": "eu-1"}},
		spec:   func(*testing.T) slo.Spec { return slo.DefaultSpec() },
	}, {
		name: "cluster label, selector, thresholds, objectives, stall",
		values: map[string]any{
			"cluster": map[string]any{"label": "k8s_cluster", "external": true},
			"slo": map[string]any{
				"selector":       `job="rvsync-slo", namespace="monitoring"`,
				"listLatency":    map[string]any{"objective": 0.901, "thresholdSeconds": 1},     // 0.901*100 is 90.10000000000001 in float
				"canaryDelivery": map[string]any{"objective": 0.99995, "thresholdSeconds": 2.5}, // p99.995, not p100
				"cacheStaleness": map[string]any{"objective": 0.999, "thresholdSeconds": 15},
				"rvLag":          map[string]any{"objective": 0.95, "thresholdRevisions": 1000},
				"staleReads":     map[string]any{"objective": 0.906}, // 1-0.906 is 0.09399999999999997
				"symptoms":       map[string]any{"stalledAfterSeconds": 600, "stalledFor": "3m"},
			},
		},
		spec: func(t *testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.ClusterLabel, s.Selector = "k8s_cluster", `job="rvsync-slo", namespace="monitoring"`
			setSLO(t, &s, slo.ListLatency, 0.901, 1)
			setSLO(t, &s, slo.CanaryDelivery, 0.99995, 2.5)
			setSLO(t, &s, slo.CacheStaleness, 0.999, 15)
			setSLO(t, &s, slo.RVLag, 0.95, 1000)
			setSLO(t, &s, slo.StaleReads, 0.906, 0)
			s.Symptoms.StalledAfterSeconds, s.Symptoms.StalledFor = 600, "3m"
			return s
		},
	}, {
		name:   "an SLO off: its panels, table column and threshold lines go, the rest moves up",
		values: map[string]any{"slo": map[string]any{"rvLag": map[string]any{"enabled": false}}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			disable(&s, slo.RVLag)
			return s
		},
		single: true,
	}, {
		name: "the first SLO off and the canary off (the table sorts by the next column)",
		values: map[string]any{
			"cluster": map[string]any{"name": "eu-1"},
			"canary":  map[string]any{"enabled": false},
			"slo":     map[string]any{"listLatency": map[string]any{"enabled": false}, "rvLag": map[string]any{"objective": 0.95, "thresholdRevisions": 1000}},
		},
		spec: func(t *testing.T) slo.Spec {
			s := slo.DefaultSpec()
			disable(&s, slo.ListLatency, slo.CanaryDelivery) // canary.enabled=false drops its SLO
			setSLO(t, &s, slo.RVLag, 0.95, 1000)
			return s
		},
	}, {
		name: "every SLO off",
		values: map[string]any{"slo": map[string]any{
			"listLatency":    map[string]any{"enabled": false},
			"canaryDelivery": map[string]any{"enabled": false},
			"cacheStaleness": map[string]any{"enabled": false},
			"rvLag":          map[string]any{"enabled": false},
			"staleReads":     map[string]any{"enabled": false},
		}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			disable(&s, slo.Names()...)
			return s
		},
		single: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := dashboards.Render(dashboards.Config{Spec: chartSpec(t, chart.Options{}, tt.spec(t)), SingleCluster: tt.single})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, u := range render(t, chart.Options{Values: tt.values}).OfKind("ConfigMap") {
				var cm corev1.ConfigMap
				if err := chart.Into(u, &cm); err != nil {
					t.Fatal(err)
				}
				for k, v := range cm.Data {
					if _, ok := want[k]; ok {
						got[k] = v
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("the chart ships dashboards %v, want %d", keys(got), len(want))
			}
			for name, w := range want {
				var g, wv any
				if err := json.Unmarshal([]byte(got[name]), &g); err != nil {
					t.Fatalf("%s: the chart's dashboard is not JSON: %v", name, err)
				}
				if err := json.Unmarshal(w, &wv); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g, wv) {
					gb, _ := json.MarshalIndent(g, "", " ")
					wb, _ := json.MarshalIndent(wv, "", " ")
					t.Errorf("%s differs from dashboards.Render of the equivalent spec: %s", name, firstDiff(string(gb), string(wb)))
				}
			}
		})
	}
}
