//go:build integration

package chart_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

func notes(t *testing.T, o chart.Options) string {
	t.Helper()
	n, err := chart.Notes(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantIn(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// TestMonitoringModes: `helm template` without --api-versions (what GitOps
// tools run: they know no cluster) either renders what the user asked for
// or says why not. monitoring=auto where the operator's kinds are not
// served fails naming the values to set, instead of dropping the
// ServiceMonitor and PrometheusRule and shipping the rules in a ConfigMap
// nobody mounts, with the only warning in NOTES, which helm template never
// prints (issue #29); operator renders them whatever the renderer knows;
// plain never does and ships the rules as a ConfigMap, and NOTES says how
// to load it; auto with the kinds served renders them.
func TestMonitoringModes(t *testing.T) {
	_, err := chart.Template(chart.Options{WithoutOperator: true})
	if err == nil {
		t.Fatal("monitoring=auto without the operator's kinds rendered: the ServiceMonitor and PrometheusRule were dropped silently")
	}
	wantIn(t, "the error of monitoring=auto without the operator's kinds", err.Error(),
		"monitoring=auto", "does not serve", "ServiceMonitor and PrometheusRule", "--set monitoring=operator", "--set monitoring=plain")
	// only the PrometheusRule enabled: the message names it alone
	_, err = chart.Template(chart.Options{WithoutOperator: true, Values: map[string]any{"serviceMonitor": map[string]any{"enabled": false}}})
	if err == nil || !strings.Contains(err.Error(), "monitoring.coreos.com/v1 PrometheusRule (") || !strings.Contains(err.Error(), "no Prometheus would load the SLO rules") {
		t.Errorf("auto, PrometheusRule alone unserved: %v", err)
	}
	for _, tt := range []struct {
		name     string
		o        chart.Options
		operator bool // ServiceMonitor and PrometheusRule rendered, rules only there
	}{
		{"operator, rendered without the kinds (GitOps)", chart.Options{WithoutOperator: true, Values: map[string]any{"monitoring": "operator"}}, true},
		{"auto, the kinds served", chart.Options{}, true},
		{"plain, rendered without the kinds", chart.Options{WithoutOperator: true, Values: map[string]any{"monitoring": "plain"}}, false},
		{"plain, the kinds served", chart.Options{Values: map[string]any{"monitoring": "plain"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := render(t, tt.o)
			_, operator := m.Split()
			files, err := m.RuleFiles()
			if err != nil {
				t.Fatal(err)
			}
			n := notes(t, tt.o)
			if !tt.operator {
				if len(operator) != 0 {
					t.Errorf("rendered %d operator objects", len(operator))
				}
				if _, ok := files["ConfigMap rvsync-slo-rules"]; !ok || len(files) != 1 {
					t.Errorf("want the rules in ConfigMap rvsync-slo-rules only, have %v", keys(files))
				}
				wantIn(t, "NOTES", n, "default/rvsync-slo-rules", "rule_files", "monitoring=plain")
				return
			}
			if len(m.OfKind(monv1.ServiceMonitorsKind)) != 1 || len(m.OfKind(monv1.PrometheusRuleKind)) != 1 {
				t.Errorf("want a ServiceMonitor and a PrometheusRule, rendered %d objects of the operator", len(operator))
			}
			if _, ok := files[monv1.PrometheusRuleKind]; !ok || len(files) != 1 {
				t.Errorf("want the rules in the PrometheusRule only, have %v", keys(files))
			}
			if strings.Contains(n, "WARNING") {
				t.Errorf("NOTES warns:\n%s", n)
			}
		})
	}
	if _, err := chart.Template(chart.Options{Values: map[string]any{"monitoring": "sometimes"}}); err == nil || !strings.Contains(err.Error(), "/monitoring") {
		t.Errorf("monitoring=sometimes: want the schema to refuse it, got %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// kubePrometheusStackSelector is what kube-prometheus-stack's Prometheus
// selects ServiceMonitors and PrometheusRules by at its defaults
// (serviceMonitorSelectorNilUsesHelmValues, ruleSelectorNilUsesHelmValues):
// its own release name in the label `release`.
func kubePrometheusStackSelector(t *testing.T, release string) labels.Selector {
	t.Helper()
	return labelSelector(t, &metav1.LabelSelector{MatchLabels: map[string]string{"release": release}})
}

// TestKubePrometheusStackSelects: one value, releaseLabel, makes
// kube-prometheus-stack's default selectors pick the ServiceMonitor and the
// PrometheusRule, and NOTES says which selects what; without it NOTES says
// what to set.
func TestKubePrometheusStackSelects(t *testing.T) {
	sel := kubePrometheusStackSelector(t, "kps")
	selected := func(m chart.Manifests) map[string]bool {
		out := map[string]bool{}
		for _, kind := range []string{monv1.ServiceMonitorsKind, monv1.PrometheusRuleKind} {
			u, err := m.One(kind)
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = sel.Matches(labels.Set(u.GetLabels()))
		}
		return out
	}
	o := chart.Options{Values: map[string]any{"releaseLabel": "kps"}}
	for kind, ok := range selected(render(t, o)) {
		if !ok {
			t.Errorf("releaseLabel=kps: kube-prometheus-stack release kps does not select the %s", kind)
		}
	}
	wantIn(t, "NOTES", notes(t, o), `kube-prometheus-stack release "kps" selects it by release=kps`, `loaded by kube-prometheus-stack release "kps"`)

	for kind, ok := range selected(render(t, chart.Options{})) {
		if ok {
			t.Errorf("defaults: the %s carries release=kps", kind)
		}
	}
	wantIn(t, "NOTES", notes(t, chart.Options{}), "--set releaseLabel=<kube-prometheus-stack release name>")

	// additional labels reach the objects too, and win over releaseLabel
	m := render(t, chart.Options{Values: map[string]any{"releaseLabel": "kps",
		"serviceMonitor": map[string]any{"additionalLabels": map[string]any{"prometheus": "main"}},
		"prometheusRule": map[string]any{"additionalLabels": map[string]any{"release": "other"}}}})
	sm, _ := m.One(monv1.ServiceMonitorsKind)
	pr, _ := m.One(monv1.PrometheusRuleKind)
	if l := sm.GetLabels(); l["prometheus"] != "main" || l["release"] != "kps" {
		t.Errorf("ServiceMonitor labels %v: want prometheus=main and release=kps", l)
	}
	if l := pr.GetLabels(); l["release"] != "other" {
		t.Errorf("PrometheusRule labels %v: want release=other from additionalLabels", l)
	}
}

// TestRejectsWhatTheExporterRejects: values that would make the exporter
// exit 2 (and the pod crash-loop) fail `helm template` with the exporter's
// own message, its setting names replaced by the values' names.
func TestRejectsWhatTheExporterRejects(t *testing.T) {
	valuesNames := strings.NewReplacer("maxResources", "exporter.maxResources", "probeInterval", "exporter.probeInterval", "resources", "watchedResources")
	res := func(names ...string) []config.ResourceConfig {
		var out []config.ResourceConfig
		for _, n := range names {
			out = append(out, config.ResourceConfig{Name: n})
		}
		return out
	}
	dur := func(s string) config.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return config.Duration{Duration: d}
	}
	tests := []struct {
		name   string
		values map[string]any
		cfg    config.Config // what the exporter would be given
	}{
		{"more resources than maxResources, the canary's counted",
			map[string]any{"watchedResources": []any{"pods", "nodes"}, "exporter": map[string]any{"maxResources": 2}},
			config.Config{Resources: res("pods", "nodes"), MaxResources: 2}},
		{"a resource listed twice",
			map[string]any{"watchedResources": []any{"pods", "nodes", map[string]any{"name": "pods", "space": "other"}}},
			config.Config{Resources: res("pods", "nodes", "pods")}},
		{"canary deadline equal to the interval",
			map[string]any{"canary": map[string]any{"interval": "30s", "deadline": "30s"}},
			config.Config{Canary: config.CanaryConfig{Interval: dur("30s"), Deadline: dur("30s")}}},
		{"canary deadline below the interval",
			map[string]any{"canary": map[string]any{"interval": "1m0s", "deadline": "45s"}},
			config.Config{Canary: config.CanaryConfig{Interval: dur("1m"), Deadline: dur("45s")}}},
		{"canary interval below 100ms",
			map[string]any{"canary": map[string]any{"interval": "50ms"}},
			config.Config{Canary: config.CanaryConfig{Interval: dur("50ms")}}},
		{"probe interval below 100ms",
			map[string]any{"exporter": map[string]any{"probeInterval": "10ms"}},
			config.Config{ProbeInterval: dur("10ms")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Defaults()
			exporterErr := cfg.Validate()
			if exporterErr == nil {
				t.Fatalf("the exporter accepts %+v: the case tests nothing", tt.cfg)
			}
			want := valuesNames.Replace(exporterErr.Error())
			_, err := chart.Template(chart.Options{Values: tt.values})
			if err == nil {
				t.Fatalf("helm template accepts values the exporter refuses with %q", exporterErr)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("helm template fails with\n  %v\nwant the exporter's message in the values' names:\n  %s", err, want)
			}
		})
	}
	// the boundaries themselves pass
	if _, err := chart.Template(chart.Options{Values: map[string]any{"watchedResources": []any{"pods"}, "exporter": map[string]any{"maxResources": 2},
		"canary": map[string]any{"interval": "30s", "deadline": "30.001s"}}}); err != nil {
		t.Errorf("values at the limits: %v", err)
	}
}

// TestPerResourceSettings: the per-resource settings the README documents
// (space, convergence, observedGenerationPath) and canary.resources pass
// the schema and reach the exporter's config, and the ClusterRole and the
// canary's Role follow what the exporter then watches and writes.
func TestPerResourceSettings(t *testing.T) {
	m := render(t, chart.Options{Values: map[string]any{
		"watchedResources": []any{"pods",
			map[string]any{"name": "events", "space": "events-etcd"},
			map[string]any{"name": "widgets.example.com", "convergence": true, "observedGenerationPath": "status.sync.observedGeneration"},
			map[string]any{"name": "deployments.apps", "convergence": false}},
		"canary": map[string]any{"resources": []any{"leases.coordination.k8s.io"}},
	}})
	cfg, raw := exporterConfig(t, m)
	checkClusterRole(t, m, cfg)
	byName := map[string]config.ResourceConfig{}
	for _, r := range cfg.Resources {
		byName[r.Name] = r
	}
	if byName["events"].Space != "events-etcd" || !byName["widgets.example.com"].TracksConvergence() ||
		byName["widgets.example.com"].ObservedGenerationPath != "status.sync.observedGeneration" || byName["deployments.apps"].TracksConvergence() {
		t.Errorf("per-resource settings lost on the way to the exporter:\n%s", raw)
	}
	role := into[rbacv1.Role](t, m, "Role")
	if len(role.Rules) != 1 || role.Rules[0].APIGroups[0] != "coordination.k8s.io" || role.Rules[0].Resources[0] != "leases" {
		t.Errorf("canary Role rules %+v: want writing leases.coordination.k8s.io only", role.Rules)
	}
	for _, bad := range []map[string]any{
		{"name": "pods", "observedGenerationPath": ".status"},
		{"name": "pods", "convergence": "yes"},
		{"name": "pods", "space": ""},
	} {
		if _, err := chart.Template(chart.Options{Values: map[string]any{"watchedResources": []any{bad}}}); err == nil || !strings.Contains(err.Error(), "/watchedResources/0") {
			t.Errorf("watchedResources [%v]: want a schema error at /watchedResources/0, got %v", bad, err)
		}
	}
}

// TestContainerResources: top-level `resources` are the container's
// requests and limits, as in every chart, with memory sized from
// watchedObjects when it is set.
func TestContainerResources(t *testing.T) {
	_, pod := workload(t, render(t, chart.Options{Values: map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}}))
	got := pod.Spec.Containers[0].Resources
	if !got.Requests.Cpu().Equal(resource.MustParse("100m")) || !got.Limits.Memory().Equal(resource.MustParse("128Mi")) {
		t.Errorf("container resources %v: want requests.cpu 100m over the default limits", got)
	}
	// Sized from the object count: 50 MiB + 5 MiB and 38 MiB + 4 MiB per
	// 100,000 objects, rounded up; the CPU request stays.
	for _, c := range []struct {
		objects        int
		limit, request string
	}{{2_000_000, "150Mi", "118Mi"}, {500_000, "75Mi", "58Mi"}, {1, "51Mi", "39Mi"}} {
		_, pod := workload(t, render(t, chart.Options{Values: map[string]any{"watchedObjects": c.objects}}))
		got := pod.Spec.Containers[0].Resources
		if !got.Limits.Memory().Equal(resource.MustParse(c.limit)) || !got.Requests.Memory().Equal(resource.MustParse(c.request)) ||
			!got.Requests.Cpu().Equal(resource.MustParse("50m")) {
			t.Errorf("watchedObjects %d: container resources %v; want memory limit %s, request %s, cpu request 50m", c.objects, got, c.limit, c.request)
		}
	}
	if _, err := chart.Template(chart.Options{Values: map[string]any{"watchedObjects": -1}}); err == nil || !strings.Contains(err.Error(), "watchedObjects") {
		t.Errorf("watchedObjects -1: want a schema error naming it, got %v", err)
	}
	_, err := chart.Template(chart.Options{Values: map[string]any{"resources": []any{"pods"}}})
	if err == nil || !strings.Contains(err.Error(), "/resources") {
		t.Errorf("a list of resources: want a schema error at /resources (the watched list is watchedResources), got %v", err)
	}
}

func durationOf(d *monv1.NonEmptyDuration) string {
	if d == nil {
		return ""
	}
	return string(*d)
}

func matcherStrings(ms []monv1alpha1.Matcher) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}

// TestAlertmanagerConfig: alertmanagerConfig.enabled makes the routing of
// docs/alertmanager.yaml (alerts.RoutingOf of the same spec) as an
// AlertmanagerConfig of the operator, with the receivers of the values,
// and adds its namespace to every alert, which the operator routes only
// then; under monitoring=auto without the operator's v1alpha1 API the chart
// fails, under plain it makes none and NOTES says so; a receiver name that
// is not among the receivers fails.
func TestAlertmanagerConfig(t *testing.T) {
	amc := map[string]any{"enabled": true, "namespace": "monitoring", "pageReceiver": "pager", "ticketReceiver": "chat",
		"receivers": []any{map[string]any{"name": "pager", "webhookConfigs": []any{map[string]any{"url": "http://pager.example/"}}}, map[string]any{"name": "chat"}}}
	values := map[string]any{"alertmanagerConfig": amc, "releaseLabel": "kps",
		"cluster": map[string]any{"label": "k8s_cluster"}, "slo": map[string]any{"severities": map[string]any{"page": "P1", "ticket": "P3"}}}
	m := render(t, chart.Options{Values: values})
	got := into[monv1alpha1.AlertmanagerConfig](t, m, monv1alpha1.AlertmanagerConfigKind)
	spec := slo.DefaultSpec()
	spec.ClusterLabel, spec.Severities = "k8s_cluster", slo.SeverityLabels{Page: "P1", Ticket: "P3"}
	want := alerts.RoutingOf(spec)

	if got.Namespace != "monitoring" || got.Labels["release"] != "kps" {
		t.Errorf("AlertmanagerConfig %s/%s labels %v: want namespace monitoring and release=kps", got.Namespace, got.Name, got.Labels)
	}
	routes, err := got.Spec.Route.ChildRoutes()
	if err != nil || len(routes) != 2 {
		t.Fatalf("want a page and a ticket route, have %d (%v)", len(routes), err)
	}
	for i, w := range []struct {
		receiver          string
		matchers, groupBy []string
	}{{"pager", want.PageMatchers, want.PageGroupBy}, {"chat", want.Matchers, want.TicketGroupBy}} {
		r := routes[i]
		if r.Receiver != w.receiver || !slices.Equal(matcherStrings(r.Matchers), w.matchers) || !slices.Equal(r.GroupBy, w.groupBy) {
			t.Errorf("route %d: receiver %q matchers %v group by %v; want %q %v %v", i, r.Receiver, matcherStrings(r.Matchers), r.GroupBy, w.receiver, w.matchers, w.groupBy)
		}
		if timing := (alerts.Timing{GroupWait: durationOf(r.GroupWait), GroupInterval: durationOf(r.GroupInterval), RepeatInterval: durationOf(r.RepeatInterval)}); timing != alerts.DefaultTiming {
			t.Errorf("route %d timing %+v, want %+v", i, timing, alerts.DefaultTiming)
		}
	}
	if len(got.Spec.InhibitRules) != 1 {
		t.Fatalf("inhibit rules %+v: want one", got.Spec.InhibitRules)
	}
	ir := got.Spec.InhibitRules[0]
	if !slices.Equal(matcherStrings(ir.SourceMatch), want.PageMatchers) || !slices.Equal(matcherStrings(ir.TargetMatch), want.TicketMatchers) || !slices.Equal(ir.Equal, want.InhibitEqual) {
		t.Errorf("inhibit rule %+v, want source %v target %v equal %v", ir, want.PageMatchers, want.TicketMatchers, want.InhibitEqual)
	}
	if len(got.Spec.Receivers) != 2 || got.Spec.Receivers[0].Name != "pager" || len(got.Spec.Receivers[0].WebhookConfigs) != 1 {
		t.Errorf("receivers %+v: want the values' pager (with its webhook) and chat", got.Spec.Receivers)
	}
	pr, err := m.PrometheusRule()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && r.Labels["namespace"] != "monitoring" {
				t.Errorf("alert %s labels %v: want namespace=monitoring, the AlertmanagerConfig's", r.Alert, r.Labels)
			}
		}
	}

	// auto where only the AlertmanagerConfig is missing (the rules ship in
	// the ConfigMap the values ask for): the chart fails as it does for a
	// missing ServiceMonitor or PrometheusRule, rather than drop it
	o := chart.Options{Values: merge(values, map[string]any{"serviceMonitor": map[string]any{"enabled": false}, "rulesConfigMap": map[string]any{"enabled": true}}), WithoutOperator: true}
	_, err = chart.Template(o)
	if err == nil {
		t.Fatal("monitoring=auto without the AlertmanagerConfig kind rendered: the AlertmanagerConfig was dropped silently")
	}
	wantIn(t, "the error of monitoring=auto without AlertmanagerConfig", err.Error(),
		"monitoring.coreos.com/v1alpha1 AlertmanagerConfig (", "no Alertmanager would route the alerts", "alertmanagerConfig.enabled=false", "docs/alertmanager.yaml")
	// plain never creates it, and NOTES says to route by hand
	o.Values = merge(o.Values, map[string]any{"monitoring": "plain"})
	if n := len(render(t, o).OfKind(monv1alpha1.AlertmanagerConfigKind)); n != 0 {
		t.Errorf("monitoring=plain: %d AlertmanagerConfigs rendered", n)
	}
	wantIn(t, "NOTES", notes(t, o), "monitoring=plain: no AlertmanagerConfig was created", "docs/alertmanager.yaml")

	amc["pageReceiver"] = "pagerduty"
	if _, err := chart.Template(chart.Options{Values: values}); err == nil || !strings.Contains(err.Error(), `alertmanagerConfig.pageReceiver "pagerduty": must be the name of one of alertmanagerConfig.receivers [pager chat]`) {
		t.Errorf("an unknown page receiver: got %v", err)
	}
}
