//go:build integration

package chart_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// setSLO sets the objective and threshold of an SLO of s.
func setSLO(t *testing.T, s *slo.Spec, name string, objective, threshold float64) {
	t.Helper()
	for i := range s.SLOs {
		if s.SLOs[i].Name == name {
			s.SLOs[i].Objective, s.SLOs[i].Threshold = objective, threshold
			return
		}
	}
	t.Fatalf("no SLO %s", name)
}

func disable(s *slo.Spec, names ...string) {
	for i := range s.SLOs {
		for _, n := range names {
			if s.SLOs[i].Name == n {
				s.SLOs[i].Disabled = true
			}
		}
	}
}

func ciFile(t *testing.T, name string) string {
	t.Helper()
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "ci", name)
}

// TestRulesFollowValues proves that the chart's rules are exactly the rule
// generator's for the equivalent spec: the defaults give
// slo.DefaultSpec(), and each values change gives the spec with that
// change, in the PrometheusRule and in the rules ConfigMap alike.
func TestRulesFollowValues(t *testing.T) {
	tests := []struct {
		name string
		opts chart.Options
		spec func(t *testing.T) slo.Spec
	}{{
		name: "defaults",
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.UpSelector = `job="rvsync-slo", namespace="default"` // the ServiceMonitor's targets
			return s
		},
	}, {
		name: "fullnameOverride and release namespace reach the up selector",
		opts: chart.Options{Release: "mon", Namespace: "monitoring", Values: map[string]any{"fullnameOverride": "informer-slo"}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.UpSelector = `job="informer-slo", namespace="monitoring"`
			return s
		},
	}, {
		name: "severities and Grafana URL",
		opts: chart.Options{Values: map[string]any{"slo": map[string]any{
			"severities": map[string]any{"page": "P1", "ticket": "P3"},
			"grafanaURL": "https://grafana.example.com/",
		}}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.UpSelector = `job="rvsync-slo", namespace="default"`
			s.Severities = slo.SeverityLabels{Page: "P1", Ticket: "P3"}
			s.GrafanaURL = "https://grafana.example.com/"
			return s
		},
	}, {
		name: "without the operator the up selector is the job name pattern",
		opts: chart.Options{WithoutOperator: true, Values: map[string]any{"monitoring": "plain"}},
		spec: func(*testing.T) slo.Spec { return slo.DefaultSpec() },
	}, {
		name: "plain Prometheus scraping the API servers as its example config names them",
		opts: chart.Options{WithoutOperator: true, Values: map[string]any{"monitoring": "plain", "slo": map[string]any{"apiServerJob": "kubernetes-apiservers"}}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.APIServerJob = "kubernetes-apiservers"
			return s
		},
	}, {
		name: "custom-slo scenario",
		opts: chart.Options{ValuesFiles: []string{ciFile(t, "custom-slo-values.yaml")}},
		spec: func(t *testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.RunbookURLPrefix = "https://runbooks.example.com/rvsync/#"
			s.UpSelector = `job="rvsync-slo", namespace="default"`
			setSLO(t, &s, slo.ListLatency, 0.99, 1)
			setSLO(t, &s, slo.CacheStaleness, 0.999, 15)
			disable(&s, slo.RVLag, slo.CanaryDelivery) // canary.enabled=false drops its SLO
			s.Symptoms = slo.Symptoms{StalledAfterSeconds: 180, StalledFor: "3m", NotSyncedFor: "15m", ErrorsFor: "15m", RelistsPerHour: 6}
			return s
		},
	}, {
		name: "multi-cluster scenario",
		opts: chart.Options{ValuesFiles: []string{ciFile(t, "multi-cluster-values.yaml")}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.ClusterLabel = "cluster"
			s.Selector = `job="rvsync-slo"`
			s.UpSelector = `job="rvsync-slo"`
			return s
		},
	}, {
		name: "another cluster label, extra labels",
		opts: chart.Options{Values: map[string]any{
			"cluster": map[string]any{"label": "k8s_cluster"},
			"slo":     map[string]any{"extraLabels": map[string]string{"team": "platform"}},
		}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.ClusterLabel = "k8s_cluster"
			s.ExtraLabels = map[string]string{"team": "platform"}
			s.UpSelector = `job="rvsync-slo", namespace="default"`
			return s
		},
	}, {
		name: "whole-number list threshold, fractional canary threshold, selector only",
		opts: chart.Options{Values: map[string]any{"slo": map[string]any{
			"selector":       `namespace="monitoring", job=~"rvsync.*"`,
			"listLatency":    map[string]any{"enabled": true, "objective": 0.995, "thresholdSeconds": 5},
			"canaryDelivery": map[string]any{"enabled": true, "objective": 0.9, "thresholdSeconds": 2.5},
			"rvLag":          map[string]any{"enabled": true, "objective": 0.95, "thresholdRevisions": 1000},
			"staleReads":     map[string]any{"enabled": true, "objective": 0.999},
			"extraLabels":    map[string]string{"team": "platform", "tier": "one"},
		}}},
		spec: func(t *testing.T) slo.Spec {
			s := slo.DefaultSpec()
			s.Selector = `namespace="monitoring", job=~"rvsync.*"`
			setSLO(t, &s, slo.ListLatency, 0.995, 5)
			setSLO(t, &s, slo.CanaryDelivery, 0.9, 2.5)
			setSLO(t, &s, slo.RVLag, 0.95, 1000)
			setSLO(t, &s, slo.StaleReads, 0.999, 0) // no threshold
			s.ExtraLabels = map[string]string{"team": "platform", "tier": "one"}
			return s
		},
	}, {
		name: "stale-reads SLO off",
		opts: chart.Options{Values: map[string]any{"slo": map[string]any{
			"staleReads": map[string]any{"enabled": false, "objective": 0.99},
		}}},
		spec: func(*testing.T) slo.Spec {
			s := slo.DefaultSpec()
			disable(&s, slo.StaleReads)
			s.UpSelector = `job="rvsync-slo", namespace="default"`
			return s
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := alerts.Render(chartSpec(t, tt.opts, tt.spec(t)))
			if err != nil {
				t.Fatal(err)
			}
			wantNorm, err := chart.NormalRules(want)
			if err != nil {
				t.Fatal(err)
			}
			// the PrometheusRule and the rules ConfigMap in one rendering
			opts := tt.opts
			opts.Values = merge(opts.Values, map[string]any{"rulesConfigMap": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}})
			m := render(t, opts)
			files, err := m.RuleFiles()
			if err != nil {
				t.Fatal(err)
			}
			if want := 2 - btoi(opts.WithoutOperator); len(files) != want { // no PrometheusRule without the operator
				t.Fatalf("want the rules in a PrometheusRule and a ConfigMap (without the operator: the ConfigMap), have %d files", len(files))
			}
			for name, got := range files {
				gotNorm, err := chart.NormalRules(got)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if gotNorm != wantNorm {
					t.Errorf("%s differs from alerts.Render of the equivalent spec: %s", name, firstDiff(gotNorm, wantNorm))
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// merge returns a shallow union of two values maps; b wins.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// firstDiff shows the first differing line of two texts with its neighbours.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		gl, wl := line(g, i), line(w, i)
		if gl != wl {
			return "at line " + strconv.Itoa(i+1) + ":\n  got:  " + gl + "\n  want: " + wl + "\n  after: " + line(w, i-1)
		}
	}
	return "(no difference)"
}

func line(ls []string, i int) string {
	if i < 0 || i >= len(ls) {
		return "<none>"
	}
	return ls[i]
}

// chartSpec fills in what the chart derives from the release where the
// spec s of a test leaves the generator's defaults: the runbook prefix
// pinned to the chart's version, dashboard UIDs prefixed with the release's
// full name, alerts in the release namespace.
func chartSpec(t *testing.T, o chart.Options, s slo.Spec) slo.Spec {
	t.Helper()
	if s.RunbookURLPrefix == slo.DefaultRunbookURLPrefix {
		s.RunbookURLPrefix = pinnedRunbooks(t)
	}
	if s.DashboardUIDPrefix == "" {
		name := "rvsync-slo"
		if o.Release != "" && !strings.Contains(o.Release, "rvsync-slo") {
			name = o.Release + "-rvsync-slo"
		}
		if f, ok := o.Values["fullnameOverride"].(string); ok {
			name = f
		}
		s.DashboardUIDPrefix = name + "-"
	}
	if s.AlertNamespace == "" {
		s.AlertNamespace = cmpOr(o.Namespace, "default")
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pinnedRunbooks is the chart's default runbook prefix: docs/runbooks.md at
// the release tag of the chart's version.
func pinnedRunbooks(t *testing.T) string {
	t.Helper()
	v, err := chart.Version()
	if err != nil {
		t.Fatal(err)
	}
	return "https://github.com/rvsync-slo/rvsync-slo/blob/v" + v + "/docs/runbooks.md#"
}
