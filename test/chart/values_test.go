//go:build integration

package chart_test

import (
	"slices"
	"strings"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
)

// TestNamespaceOverrideAndCommonLabels: namespaceOverride moves every
// namespaced object, what points at them (the RBAC subjects, the
// ServiceMonitor's namespace selector, the canary, the up selector) goes
// with them; commonLabels reach every object but no selector.
func TestNamespaceOverrideAndCommonLabels(t *testing.T) {
	m := render(t, chart.Options{Namespace: "release-ns", Values: map[string]any{
		"namespaceOverride": "elsewhere",
		"commonLabels":      map[string]any{"team": "platform"},
	}})
	for _, u := range m {
		if u.GetLabels()["team"] != "platform" {
			t.Errorf("%s %s lacks commonLabels: %v", u.GetKind(), u.GetName(), u.GetLabels())
		}
		switch u.GetKind() {
		case "ClusterRole", "ClusterRoleBinding":
		default:
			if u.GetNamespace() != "elsewhere" {
				t.Errorf("%s %s in namespace %q, want elsewhere", u.GetKind(), u.GetName(), u.GetNamespace())
			}
		}
	}
	for _, u := range m.OfKind("ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		if err := chart.Into(u, &b); err != nil {
			t.Fatal(err)
		}
		if b.Subjects[0].Namespace != "elsewhere" {
			t.Errorf("ClusterRoleBinding %s binds %+v", b.Name, b.Subjects)
		}
	}
	sm := into[monv1.ServiceMonitor](t, m, monv1.ServiceMonitorsKind)
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{"elsewhere"}) || sm.Spec.Selector.MatchLabels["team"] != "" {
		t.Errorf("ServiceMonitor selects namespaces %v, labels %v", sm.Spec.NamespaceSelector.MatchNames, sm.Spec.Selector.MatchLabels)
	}
	cfg, _ := exporterConfig(t, m)
	if cfg.Canary.Namespace != "elsewhere" {
		t.Errorf("canary namespace %q, want elsewhere", cfg.Canary.Namespace)
	}
	_, pod := workload(t, m)
	if pod.Labels["team"] != "platform" {
		t.Errorf("pod labels %v lack commonLabels", pod.Labels)
	}
	for _, r := range alertRules(t, m) {
		if r.Alert == "RvsyncExporterAbsent" && !strings.Contains(r.Expr.String(), `namespace="elsewhere"`) {
			t.Errorf("RvsyncExporterAbsent watches %s, want the targets in namespace elsewhere", r.Expr.String())
		}
	}
}

// TestExtraEnvAndServiceMonitorValues: env reaches the container after the
// chart's own variables; the ServiceMonitor takes annotations,
// targetLabels and podTargetLabels (decoded strictly as the operator's type).
func TestExtraEnvAndServiceMonitorValues(t *testing.T) {
	m := render(t, chart.Options{Values: map[string]any{
		"env": []any{map[string]any{"name": "GOMEMLIMIT", "value": "250MiB"},
			map[string]any{"name": "HTTPS_PROXY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "proxy", "key": "url"}}}},
		"serviceMonitor": map[string]any{
			"annotations":     map[string]any{"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"},
			"targetLabels":    []any{"app.kubernetes.io/instance"},
			"podTargetLabels": []any{"team"},
		},
	}})
	_, pod := workload(t, m)
	var names []string
	for _, e := range pod.Spec.Containers[0].Env {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"POD_NAME", "POD_NAMESPACE", "POD_UID", "GOMEMLIMIT", "HTTPS_PROXY"}) {
		t.Errorf("env %v", names)
	}
	sm := into[monv1.ServiceMonitor](t, m, monv1.ServiceMonitorsKind)
	if sm.Annotations["argocd.argoproj.io/sync-options"] == "" || !slices.Equal(sm.Spec.TargetLabels, []string{"app.kubernetes.io/instance"}) || !slices.Equal(sm.Spec.PodTargetLabels, []string{"team"}) {
		t.Errorf("ServiceMonitor annotations %v targetLabels %v podTargetLabels %v", sm.Annotations, sm.Spec.TargetLabels, sm.Spec.PodTargetLabels)
	}
	if _, err := chart.Template(chart.Options{Values: map[string]any{"env": []any{map[string]any{"value": "x"}}}}); err == nil || !strings.Contains(err.Error(), "/env/0") {
		t.Errorf("an env entry without a name: want the schema to refuse it, got %v", err)
	}
}

// TestDisabledAlertsAndRuleAnnotations: slo.disabledAlerts leaves out the
// alerts it names (a burn-rate alert's four windows) and keeps the rest and
// every recording rule; slo.additionalRuleAnnotations reach every alert and
// may not replace the rules' own.
func TestDisabledAlertsAndRuleAnnotations(t *testing.T) {
	base := alertRules(t, render(t, chart.Options{}))
	m := render(t, chart.Options{Values: map[string]any{"slo": map[string]any{
		"disabledAlerts":            map[string]any{"RvsyncRelistStorm": true, "RvsyncCacheStalenessBudgetBurn": true, "RvsyncWatchStalled": false},
		"additionalRuleAnnotations": map[string]any{"team_channel": "#platform-alerts"},
	}}})
	checkRules(t, m)
	got := alertRules(t, m)
	count := func(rs []monv1.Rule, name string) int {
		return len(slices.DeleteFunc(slices.Clone(rs), func(r monv1.Rule) bool { return r.Alert != name }))
	}
	for _, r := range base {
		want := count(base, r.Alert)
		if r.Alert == "RvsyncRelistStorm" || r.Alert == "RvsyncCacheStalenessBudgetBurn" {
			want = 0
		}
		if n := count(got, r.Alert); n != want {
			t.Errorf("%s: %d rules, want %d", r.Alert, n, want)
		}
	}
	for _, r := range got {
		if r.Annotations["team_channel"] != "#platform-alerts" || r.Annotations["summary"] == "" {
			t.Errorf("%s annotations %v: want team_channel beside the rules' own", r.Alert, r.Annotations)
		}
	}
	pr, _ := m.PrometheusRule()
	records := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Record != "" && r.Labels["slo"] == "cache-staleness" {
				records++
			}
		}
	}
	if records == 0 {
		t.Error("disabling the cache-staleness burn alert dropped its recording rules")
	}
	for _, tt := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"disabledAlerts": map[string]any{"RvsyncNoSuchAlert": true}}, `slo.disabledAlerts: no alert named "RvsyncNoSuchAlert"; the alerts are RvsyncListLatencyBudgetBurn, `},
		{map[string]any{"disabledAlerts": map[string]any{"RvsyncRelistStorm": "yes"}}, "/slo/disabledAlerts/RvsyncRelistStorm"},
		{map[string]any{"additionalRuleAnnotations": map[string]any{"summary": "x"}}, `slo.additionalRuleAnnotations: "summary" is set by the rules`},
		{map[string]any{"extraLabels": map[string]any{"namespace": "x"}}, `slo.extraLabels: "namespace" is set by the rules`},
	} {
		if _, err := chart.Template(chart.Options{Values: map[string]any{"slo": tt.values}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("slo %v: want an error with %q, got %v", tt.values, tt.want, err)
		}
	}
}

// TestSetDecimalsAndSelectors: `--set` keeps a decimal a string (helm's
// strvals); the chart takes one that parses, in range, and renders the
// same rules as the number (issue #29: "got string, want number"). An
// unquoted selector (`--set slo.selector=job=rvsync-slo`) rendered and
// broke every expression; it fails with what to write instead.
func TestSetDecimalsAndSelectors(t *testing.T) {
	asString, err := chart.TemplateArgs(chart.Options{}, "--set", "slo.listLatency.objective=0.999", "--set", "slo.listLatency.thresholdSeconds=2.5",
		"--set", "slo.cacheStaleness.thresholdSeconds=12.5", "--set", "slo.symptoms.relistsPerHour=0.5")
	if err != nil {
		t.Fatal(err)
	}
	asNumber := render(t, chart.Options{Values: map[string]any{"slo": map[string]any{
		"listLatency":    map[string]any{"enabled": true, "objective": 0.999, "thresholdSeconds": 2.5},
		"cacheStaleness": map[string]any{"enabled": true, "objective": 0.99, "thresholdSeconds": 12.5},
		"symptoms":       map[string]any{"relistsPerHour": 0.5},
	}}})
	a, _ := asString.RuleFiles()
	b, _ := asNumber.RuleFiles()
	an, err := chart.NormalRules(a[monv1.PrometheusRuleKind])
	if err != nil {
		t.Fatal(err)
	}
	bn, err := chart.NormalRules(b[monv1.PrometheusRuleKind])
	if err != nil {
		t.Fatal(err)
	}
	if an != bn {
		t.Errorf("--set decimals render other rules than numbers: %s", firstDiff(an, bn))
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "slo.listLatency.objective=1.5"}, "/slo/listLatency/objective"},
		{[]string{"--set", "slo.listLatency.objective=abc"}, "/slo/listLatency/objective"},
		{[]string{"--set", "slo.listLatency.thresholdSeconds=2"}, "/slo/listLatency/thresholdSeconds"},
		{[]string{"--set", "slo.listLatency.thresholdSeconds=2.0"}, "/slo/listLatency/thresholdSeconds"},
		{[]string{"--set", "slo.selector=job=rvsync-slo"}, `slo.selector "job=rvsync-slo": want PromQL label matchers`},
		{[]string{"--set-string", "slo.upSelector=job=\"a\" namespace=\"b\""}, `slo.upSelector`},
	} {
		if _, err := chart.TemplateArgs(chart.Options{}, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: want an error with %q, got %v", tt.args, tt.want, err)
		}
	}
	m, err := chart.TemplateArgs(chart.Options{}, "--set-string", `slo.selector=job="rvsync-slo"`)
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, m)
}
