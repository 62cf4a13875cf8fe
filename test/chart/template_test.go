//lint:file-ignore SA1019 the chart scrapes with Prometheus' own ServiceAccount token, which only the deprecated bearerTokenFile names.

//go:build integration

package chart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
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
func exporterConfig(t *testing.T, m chart.Manifests) (config.Config, string) {
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
	cfg, err := config.LoadFile(file)
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
				case monv1alpha1.AlertmanagerConfigKind:
					err = chart.Into(u, &monv1alpha1.AlertmanagerConfig{})
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
			checkPod(t, m, cfg)
			checkSelectors(t, m)
			checkServiceMonitor(t, m, cfg)
			if n := notes(t, sc.opts); !strings.Contains(n, "is installed as") {
				t.Errorf("NOTES:\n%s", n)
			}
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

// fullname is the chart's full name: the name of its Service.
func fullname(t *testing.T, m chart.Manifests) string {
	t.Helper()
	svc, err := m.One("Service")
	if err != nil {
		t.Fatal(err)
	}
	return svc.GetName()
}

// authDelegatorRules are what the exporter needs on top of list/watch to
// guard /metrics (the rules of system:auth-delegator).
var authDelegatorRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// checkClusterRole: list and watch on exactly the configured resources, no
// wildcard, no other verb; with secure metrics also exactly the
// auth-delegator rules.
func checkClusterRole(t *testing.T, m chart.Manifests, cfg config.Config) {
	t.Helper()
	u, err := m.Named("ClusterRole", fullname(t, m))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := chart.Into(u, &cr); err != nil {
		t.Fatal(err)
	}
	var granted, want []string
	var delegating []rbacv1.PolicyRule
	for _, r := range cr.Rules {
		if slices.Equal(r.Verbs, []string{"create"}) {
			delegating = append(delegating, r)
			continue
		}
		if !slices.Equal(r.Verbs, []string{"list", "watch"}) || len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("rule %+v: want exactly list and watch on resources", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if strings.Contains(g+res, "*") {
					t.Errorf("wildcard in rule %+v", r)
				}
				granted = append(granted, catalog.ResourceValue(g, res))
			}
		}
	}
	var wantDelegating []rbacv1.PolicyRule
	if cfg.SecureMetrics {
		wantDelegating = authDelegatorRules
	}
	if !equality.Semantic.DeepEqual(delegating, wantDelegating) {
		t.Errorf("create rules %+v, want %+v (secureMetrics %v)", delegating, wantDelegating, cfg.SecureMetrics)
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

// workload returns the one exporter workload: the Deployment, or the
// StatefulSet in sharded mode (never both), and its pod template.
func workload(t *testing.T, m chart.Manifests) (kind string, pod corev1.PodTemplateSpec) {
	t.Helper()
	deploys, sets := m.OfKind("Deployment"), m.OfKind("StatefulSet")
	switch {
	case len(deploys) == 1 && len(sets) == 0:
		return "Deployment", into[appsv1.Deployment](t, m, "Deployment").Spec.Template
	case len(deploys) == 0 && len(sets) == 1:
		return "StatefulSet", into[appsv1.StatefulSet](t, m, "StatefulSet").Spec.Template
	}
	t.Fatalf("want one Deployment or one StatefulSet, rendered %d and %d", len(deploys), len(sets))
	return "", pod
}

// checkPod: the exporter reads the rendered config, probes its health
// endpoints in the scheme it serves, mounts its metrics certificate where
// the config says, and runs locked down.
func checkPod(t *testing.T, m chart.Manifests, cfg config.Config) {
	t.Helper()
	_, tmpl := workload(t, m)
	c := tmpl.Spec.Containers[0]
	if !slices.Contains(c.Args, "--config=/etc/rvsync/config.yaml") {
		t.Errorf("args %v: want --config=/etc/rvsync/config.yaml", c.Args)
	}
	scheme := corev1.URISchemeHTTP
	if cfg.SecureMetrics {
		scheme = corev1.URISchemeHTTPS
	}
	for path, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Scheme != scheme {
			t.Errorf("probe %+v: want %s %s", p, scheme, path)
		}
	}
	if dir := cfg.MetricsCertDir; dir != "" {
		i := slices.IndexFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == dir })
		if i < 0 {
			t.Fatalf("metricsCertDir %s is not mounted: %+v", dir, c.VolumeMounts)
		}
		j := slices.IndexFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
		if j < 0 || tmpl.Spec.Volumes[j].Secret == nil {
			t.Errorf("metricsCertDir %s: want a Secret volume, have %+v", dir, tmpl.Spec.Volumes)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want read-only root, no privilege escalation, drop ALL", sc)
	}
}

// checkSelectors: the Service, PodDisruptionBudget and NetworkPolicy select
// the exporter's pods, whichever workload runs them.
func checkSelectors(t *testing.T, m chart.Manifests) {
	t.Helper()
	kind, tmpl := workload(t, m)
	pods := labels.Set(tmpl.Labels)
	svc := into[corev1.Service](t, m, "Service")
	selectors := map[string]labels.Selector{"Service": labels.SelectorFromSet(svc.Spec.Selector)}
	if len(m.OfKind("PodDisruptionBudget")) > 0 {
		pdb := into[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget")
		selectors["PodDisruptionBudget"] = labelSelector(t, pdb.Spec.Selector)
	}
	if len(m.OfKind("NetworkPolicy")) > 0 {
		np := into[networkingv1.NetworkPolicy](t, m, "NetworkPolicy")
		selectors["NetworkPolicy"] = labelSelector(t, &np.Spec.PodSelector)
	}
	for what, sel := range selectors {
		if sel.Empty() || !sel.Matches(pods) {
			t.Errorf("%s selector %v does not select the %s's pods %v", what, sel, kind, pods)
		}
	}
}

func labelSelector(t *testing.T, ls *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// serviceAccountToken is where Prometheus' pod finds its own token.
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// checkServiceMonitor: with secure metrics the ServiceMonitor scrapes https
// with the Prometheus pod's token, verifying the certificate when a CA is
// configured and skipping verification otherwise; without, plain http.
func checkServiceMonitor(t *testing.T, m chart.Manifests, cfg config.Config) {
	t.Helper()
	if len(m.OfKind(monv1.ServiceMonitorsKind)) == 0 {
		return
	}
	sm := into[monv1.ServiceMonitor](t, m, monv1.ServiceMonitorsKind)
	for _, ep := range sm.Spec.Endpoints {
		if !cfg.SecureMetrics {
			if ep.Scheme != nil || ep.BearerTokenFile != "" || ep.TLSConfig != nil {
				t.Errorf("endpoint %+v: want plain http without credentials", ep)
			}
			continue
		}
		if ep.Scheme.String() != "https" || ep.BearerTokenFile != serviceAccountToken || ep.TLSConfig == nil {
			t.Errorf("endpoint %+v: want https with bearerTokenFile %s and a tlsConfig", ep, serviceAccountToken)
			continue
		}
		skip := ep.TLSConfig.InsecureSkipVerify != nil && *ep.TLSConfig.InsecureSkipVerify
		if hasCA := ep.TLSConfig.CA != (monv1.SecretOrConfigMap{}) || ep.TLSConfig.CAFile != ""; hasCA == skip {
			t.Errorf("tlsConfig %+v: want insecureSkipVerify exactly when no CA is configured", ep.TLSConfig)
		}
	}
}

// TestEveryExampleRendersWithoutACluster: each ci/*-values.yaml renders
// with a plain `helm template` (no cluster, no --api-versions), as
// chart-testing, GitOps tools and a new user render it (issue #40: five of
// six failed until monitoring=operator was added by hand), and says
// `monitoring` itself, so what it renders does not depend on the cluster.
func TestEveryExampleRendersWithoutACluster(t *testing.T) {
	files, err := chart.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := chart.Template(chart.Options{ValuesFiles: []string{f}, WithoutOperator: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v struct{ Monitoring string }
			if err := yaml.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			_, operator := m.Split()
			switch v.Monitoring {
			case "operator":
				if len(operator) == 0 {
					t.Error("monitoring=operator rendered no operator object")
				}
			case "plain":
				if len(operator) != 0 {
					t.Errorf("monitoring=plain rendered %d operator objects", len(operator))
				}
			default:
				t.Errorf("monitoring %q: an example says operator or plain, so that helm template renders it as helm install does", v.Monitoring)
			}
		})
	}
}
