//go:build integration

package chart_test

import (
	"regexp"
	"strings"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// alertRules returns the alerting rules of the rendered PrometheusRule.
func alertRules(t *testing.T, m chart.Manifests) []monv1.Rule {
	t.Helper()
	pr, err := m.PrometheusRule()
	if err != nil {
		t.Fatal(err)
	}
	var out []monv1.Rule
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// runbookAnchors are the sections of docs/runbooks.md, as GitHub anchors
// (lower case, spaces as hyphens, other punctuation dropped).
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b := testenv.RepoFile(t, "docs", "runbooks.md")
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			out[githubAnchor.Replace(strings.ToLower(strings.TrimSpace(h)))] = true
		}
	}
	return out
}

// githubAnchor turns a lower-cased heading into GitHub's anchor of it.
var githubAnchor = strings.NewReplacer(" ", "-", ",", "", ".", "", ":", "", "'", "", "(", "", ")", "", "`", "")

// TestPodDisruptionBudgetNeverBlocksDrains: wherever the chart makes a
// PodDisruptionBudget, it lets at least one exporter pod be evicted; on one
// pod it makes none (issue #29: the kube-prometheus-stack example made
// minAvailable 1 on the single replica, and drains stalled).
func TestPodDisruptionBudgetNeverBlocksDrains(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    chart.Options
		want bool // a PDB rendered
	}{
		{"kube-prometheus-stack scenario, one replica", chart.Options{ValuesFiles: []string{ciFile(t, "kube-prometheus-stack-values.yaml")}}, false},
		{"enabled, one replica, minAvailable 1", chart.Options{Values: map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1, "maxUnavailable": ""}}}, false},
		{"enabled, two replicas", chart.Options{Values: map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"enabled": true}}}, true},
		{"sharded scenario, three shards", chart.Options{ValuesFiles: []string{ciFile(t, "sharded-secure-values.yaml")}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := render(t, tt.o)
			pdbs := m.OfKind("PodDisruptionBudget")
			if !tt.want {
				if len(pdbs) != 0 {
					t.Errorf("a PodDisruptionBudget on one pod: %v", pdbs[0].Object["spec"])
				}
				return
			}
			pdb := into[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget")
			pods := 0
			if d := m.OfKind("Deployment"); len(d) == 1 {
				pods = int(*into[appsv1.Deployment](t, m, "Deployment").Spec.Replicas)
			} else {
				pods = int(*into[appsv1.StatefulSet](t, m, "StatefulSet").Spec.Replicas)
			}
			allowed := 0
			switch {
			case pdb.Spec.MaxUnavailable != nil:
				v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, pods, true)
				allowed = v
			case pdb.Spec.MinAvailable != nil:
				v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, pods, true)
				allowed = pods - v
			}
			if allowed < 1 {
				t.Errorf("PodDisruptionBudget %+v on %d pods allows %d evictions", pdb.Spec, pods, allowed)
			}
		})
	}
	_, err := chart.Template(chart.Options{Values: map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 2, "maxUnavailable": ""}}})
	if err == nil || !strings.Contains(err.Error(), "podDisruptionBudget.minAvailable 2 with 2 pods") {
		t.Errorf("minAvailable 2 of 2 pods: want a failure naming it, got %v", err)
	}
}

// TestAlertsFitKubePrometheusStack: every alert carries the release
// namespace as its namespace label, a real namespace and the same on every
// alert, so kube-prometheus-stack's default route (group_by namespace)
// makes one notification of a fault that hits every resource
// (TestKubePrometheusStackDefaultAlertmanager runs it on a real
// Alertmanager; before, <namespace>/<resource> made one per resource), and
// its runbook_url points at a section of docs/runbooks.md at the chart's
// release tag, not main.
func TestAlertsFitKubePrometheusStack(t *testing.T) {
	anchors := runbookAnchors(t)
	prefix := pinnedRunbooks(t)
	m := render(t, chart.Options{Namespace: "monitoring", ValuesFiles: []string{ciFile(t, "kube-prometheus-stack-values.yaml")}})
	for _, r := range alertRules(t, m) {
		if ns := r.Labels["namespace"]; ns != "monitoring" {
			t.Errorf("%s: namespace %q, want the release namespace monitoring", r.Alert, ns)
		}
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, prefix)
		if !ok || !anchors[anchor] {
			t.Errorf("%s: runbook_url %s: want %s<a section of docs/runbooks.md>", r.Alert, url, prefix)
		}
	}
}

// dashboardUIDs returns the UIDs of the rendered dashboards, and the
// dashboard paths (/d/<uid>/) the alerts link.
func dashboardUIDs(t *testing.T, m chart.Manifests) (uids, linked map[string]bool) {
	t.Helper()
	uids, linked = map[string]bool{}, map[string]bool{}
	uid := regexp.MustCompile(`(?m)^  "uid": "([^"]*)"`)
	for _, cm := range m.OfKind("ConfigMap") {
		data, _ := cm.Object["data"].(map[string]any)
		for k, v := range data {
			if strings.HasSuffix(k, ".json") {
				for _, u := range uid.FindAllStringSubmatch(v.(string), -1) {
					uids[u[1]] = true
				}
			}
		}
	}
	path := regexp.MustCompile(`/d/([^/]+)/`)
	for _, r := range alertRules(t, m) {
		for _, p := range path.FindAllStringSubmatch(r.Annotations["dashboard_url"], -1) {
			linked[p[1]] = true
		}
	}
	return uids, linked
}

// TestDashboardUIDsPerRelease: two releases in one Grafana never share a
// dashboard UID (issue #29: they overwrote each other's dashboards), every
// UID fits Grafana's 40 characters, and the alerts link the dashboards of
// their own release.
func TestDashboardUIDsPerRelease(t *testing.T) {
	seen := map[string]string{}
	for _, rel := range []string{"rvsync-slo", "staging", "a-release-name-longer-than-grafana-allows-in-uids"} {
		uids, linked := dashboardUIDs(t, render(t, chart.Options{Release: rel}))
		if len(uids) != 3 {
			t.Fatalf("release %s: dashboard UIDs %v, want 3", rel, uids)
		}
		for u := range uids {
			if len(u) > 40 {
				t.Errorf("release %s: UID %s is longer than Grafana's 40 characters", rel, u)
			}
			if other, dup := seen[u]; dup {
				t.Errorf("releases %s and %s share dashboard UID %s", other, rel, u)
			}
			seen[u] = rel
		}
		for l := range linked {
			if !uids[l] {
				t.Errorf("release %s: an alert links dashboard %s, which the release does not ship (%v)", rel, l, uids)
			}
		}
	}
}

// TestDashboardPanelsLinkRunbooks: the dashboards' panels link the
// runbooks of the alerts about what they show, at the chart's release.
func TestDashboardPanelsLinkRunbooks(t *testing.T) {
	anchors := runbookAnchors(t)
	prefix := pinnedRunbooks(t)
	link := regexp.MustCompile(`"url": "(https://[^"]*runbooks[^"]*)"`)
	n := 0
	for _, cm := range render(t, chart.Options{}).OfKind("ConfigMap") {
		data, _ := cm.Object["data"].(map[string]any)
		for k, v := range data {
			if !strings.HasSuffix(k, ".json") {
				continue
			}
			links := link.FindAllStringSubmatch(v.(string), -1)
			if len(links) < 3 {
				t.Errorf("%s: %d runbook links on its panels", k, len(links))
			}
			for _, l := range links {
				n++
				anchor, ok := strings.CutPrefix(l[1], prefix)
				if !ok || !anchors[anchor] {
					t.Errorf("%s: runbook link %s: want %s<a section of docs/runbooks.md>", k, l[1], prefix)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no runbook links on the dashboards' panels")
	}
}

// TestBudgetPeriodAndRetention: slo.budgetPeriod sets the budget's range
// and recording rule; with slo.retention set, a longer budget fails the
// install and says what to do (issue #29: the "30d" budget was 10 days of
// data under kube-prometheus-stack's default retention, and nothing said so).
func TestBudgetPeriodAndRetention(t *testing.T) {
	_, err := chart.Template(chart.Options{Values: map[string]any{"slo": map[string]any{"retention": "10d"}}})
	if err == nil || !strings.Contains(err.Error(), "slo.budgetPeriod 30d is longer than slo.retention 10d") {
		t.Errorf("30d budget, 10d retention: want a failure naming both, got %v", err)
	}
	if _, err := chart.Template(chart.Options{Values: map[string]any{"slo": map[string]any{"budgetPeriod": "2d"}}}); err == nil || !strings.Contains(err.Error(), "want at least 3d") {
		t.Errorf("a 2d budget: want a failure, got %v", err)
	}
	m := render(t, chart.Options{Values: map[string]any{"slo": map[string]any{"retention": "10d", "budgetPeriod": "7d"}}})
	checkRules(t, m)
	f, err := m.RuleFiles()
	if err != nil {
		t.Fatal(err)
	}
	rules := string(f[monv1.PrometheusRuleKind])
	if !strings.Contains(rules, "record: rvsync_slo:sli_error:ratio_rate7d") || !strings.Contains(rules, "[7d])") || strings.Contains(rules, "30d") {
		t.Error("budgetPeriod 7d: want the budget recorded as ratio_rate7d over [7d] and no 30d left")
	}
}
