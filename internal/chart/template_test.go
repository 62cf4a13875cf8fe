package chart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rvsync-slo/rvsync-slo/exporter"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/internal/chart"
)

// scenario is a values setup: the defaults or one ci/ file.
type scenario struct {
	name string
	opts chart.Options
}

func scenarios(t *testing.T) []scenario {
	t.Helper()
	files, err := chart.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("want ci/*-values.yaml scenarios, found %v", files)
	}
	out := []scenario{{name: "defaults"}}
	for _, f := range files {
		out = append(out, scenario{name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), opts: chart.Options{ValuesFiles: []string{f}}})
	}
	return out
}

func render(t *testing.T, o chart.Options) chart.Manifests {
	t.Helper()
	m, err := chart.Template(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// into strictly decodes the one rendered object of a kind.
func into[T any](t *testing.T, m chart.Manifests, kind string) *T {
	t.Helper()
	u, err := m.One(kind)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := chart.Into(u, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// exporterConfig returns the rendered exporter config, loaded as the
// exporter loads it (strictly), and the raw file.
func exporterConfig(t *testing.T, m chart.Manifests) (exporter.Config, string) {
	t.Helper()
	var cm *corev1.ConfigMap
	for _, u := range m.OfKind("ConfigMap") {
		if strings.HasSuffix(u.GetName(), "-config") {
			cm = new(corev1.ConfigMap)
			if err := chart.Into(u, cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cm == nil {
		t.Fatal("no exporter config ConfigMap rendered")
	}
	raw := cm.Data["config.yaml"]
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := exporter.LoadFile(file)
	if err != nil {
		t.Fatalf("the exporter rejects the chart's config: %v\n%s", err, raw)
	}
	return cfg, raw
}

// TestLintAndTemplate lints and renders the defaults and every ci/ scenario,
// and checks what each rendering must hold.
func TestLintAndTemplate(t *testing.T) {
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			if err := chart.Lint(sc.opts); err != nil {
				t.Fatal(err)
			}
			m := render(t, sc.opts)
			core, operator := m.Split()
			for _, u := range core {
				if u.GetKind() == "" || u.GetName() == "" {
					t.Errorf("object without kind or name: %v", u.Object)
				}
			}
			for _, u := range operator {
				var err error
				switch u.GetKind() {
				case monv1.ServiceMonitorsKind:
					err = chart.Into(u, &monv1.ServiceMonitor{})
				case monv1.PrometheusRuleKind:
					err = chart.Into(u, &monv1.PrometheusRule{})
				default:
					t.Errorf("unexpected operator kind %s", u.GetKind())
				}
				if err != nil {
					t.Error(err)
				}
			}
			checkRules(t, m)
			cfg, _ := exporterConfig(t, m)
			checkClusterRole(t, m, cfg)
			checkDeployment(t, m)
		})
	}
}

// checkRules validates the rule groups of the PrometheusRule and of the
// rules ConfigMap, whichever are rendered, with Prometheus' rule parser and
// with promtool.
func checkRules(t *testing.T, m chart.Manifests) {
	t.Helper()
	files, err := m.RuleFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("neither a PrometheusRule nor a rules ConfigMap rendered")
	}
	for where, f := range files {
		groups, err := chart.ParseRules(f)
		if err != nil {
			t.Fatalf("%s: rules do not load: %v", where, err)
		}
		if len(groups.Groups) == 0 {
			t.Fatalf("%s: no rule groups", where)
		}
		promtoolCheck(t, f)
	}
}

func promtoolCheck(t *testing.T, rules []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run make deps (Debian package prometheus)")
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// checkClusterRole: list and watch on exactly the configured resources, no
// wildcard, no other verb.
func checkClusterRole(t *testing.T, m chart.Manifests, cfg exporter.Config) {
	t.Helper()
	cr := into[rbacv1.ClusterRole](t, m, "ClusterRole")
	var granted, want []string
	for _, r := range cr.Rules {
		if !slices.Equal(r.Verbs, []string{"list", "watch"}) || len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("rule %+v: want exactly list and watch on resources", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if strings.Contains(g+res, "*") {
					t.Errorf("wildcard in rule %+v", r)
				}
				granted = append(granted, probe.ResourceName(schema.GroupResource{Group: g, Resource: res}))
			}
		}
	}
	cfg.Defaults() // adds the canary's resources, which the exporter watches too
	for _, r := range cfg.Resources {
		want = append(want, r.Name)
	}
	slices.Sort(granted)
	slices.Sort(want)
	if !slices.Equal(granted, want) {
		t.Errorf("ClusterRole grants %v, config watches %v", granted, want)
	}
}

// checkDeployment: the exporter reads the rendered config, probes its
// health endpoints and runs locked down.
func checkDeployment(t *testing.T, m chart.Manifests) {
	t.Helper()
	d := into[appsv1.Deployment](t, m, "Deployment")
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--config=/etc/rvsync/config.yaml") {
		t.Errorf("args %v: want --config=/etc/rvsync/config.yaml", c.Args)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("want liveness /healthz and readiness /readyz, have %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want read-only root, no privilege escalation, drop ALL", sc)
	}
}
