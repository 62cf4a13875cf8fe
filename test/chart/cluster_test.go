//go:build integration

package chart_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// TestControlPlane runs the tests that need a real API server on one
// control plane.
func TestControlPlane(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	t.Run("ManifestsApply", func(t *testing.T) { testManifestsApply(t, env) })
	t.Run("RBACSufficiency", func(t *testing.T) { testRBACSufficiency(t, env) })
	t.Run("SecureMetricsRBAC", func(t *testing.T) { testSecureMetricsRBAC(t, env) })
	t.Run("PodSecurityRestricted", func(t *testing.T) { testPodSecurityRestricted(t, env) })
}

func applier(t *testing.T, env *testenv.Env) *chart.Applier {
	t.Helper()
	a, err := chart.NewApplier(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testManifestsApply applies every scenario's rendering to the real API
// server with strict field validation; the Prometheus Operator's kinds,
// which it does not serve, are decoded strictly instead (TestLintAndTemplate).
func testManifestsApply(t *testing.T, env *testenv.Env) {
	a := applier(t, env)
	for i, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			opts := sc.opts
			opts.Namespace = fmt.Sprintf("rvsync-apply-%d", i)
			opts.Release = fmt.Sprintf("apply%d", i)
			core, _ := render(t, opts).Split()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := a.Apply(ctx, core); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// impersonating returns an admin config acting as the chart's ServiceAccount.
func impersonating(env *testenv.Env, namespace, sa string) *rest.Config {
	c := rest.CopyConfig(env.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + sa}
	return c
}

// runExporter runs the exporter binary with cfg, acting as client, until
// stop is called or the test ends, and returns its /metrics URL (https with
// secure metrics).
func runExporter(t *testing.T, cfg config.Config, client *rest.Config) (url string, stop func()) {
	t.Helper()
	cfg.ProbeInterval.Duration = time.Second
	file, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.StartExporterT(t, testenv.ExporterOptions{Informer: client, Config: file, Dir: t.TempDir(), TLS: cfg.SecureMetrics})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := e.Stop(30 * time.Second); err != nil {
				t.Errorf("stop exporter: %v", err)
			}
			t.Logf("exporter output:\n%s", e.Output())
		})
	}
	scheme := "http"
	if cfg.SecureMetrics {
		scheme = "https"
	}
	return scheme + "://" + e.Addr + "/metrics", stop
}

func waitMetric(t *testing.T, url, msg string, cond func(testenv.Metrics) bool) {
	t.Helper()
	testenv.WaitFor(t, 2*time.Minute, msg, func() (bool, error) {
		m, err := testenv.Scrape(url)
		if err != nil {
			return false, err
		}
		return cond(m), nil
	})
}

func synced(name string) func(testenv.Metrics) bool {
	return func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.InformerSynced.Name, map[string]string{catalog.LabelResource: name})
		return v == 1
	}
}

// testRBACSufficiency runs the exporter as the chart's ServiceAccount, with
// the chart's RBAC and config applied to a real API server: every configured
// resource syncs and the canary's ConfigMap operations are allowed in the
// release namespace only. Without one resource's rule that resource reports
// forbidden while the others keep syncing.
func testRBACSufficiency(t *testing.T, env *testenv.Env) {
	a := applier(t, env)
	const ns, release = "rvsync-rbac", "rbac"
	watched := []string{"configmaps", "namespaces", "pods", "deployments.apps", "leases.coordination.k8s.io", "endpointslices.discovery.k8s.io"}
	m := render(t, chart.Options{Release: release, Namespace: ns, Values: map[string]any{"watchedResources": watched}})
	core, _ := m.Split()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.Apply(ctx, core); err != nil {
		t.Fatal(err)
	}
	cfg, _ := exporterConfig(t, m)
	sa := into[corev1.ServiceAccount](t, m, "ServiceAccount")
	asSA := impersonating(env, ns, sa.Name)

	t.Run("every resource syncs", func(t *testing.T) {
		url, stop := runExporter(t, cfg, asSA)
		defer stop()
		for _, r := range watched {
			waitMetric(t, url, r+" synced as the chart's ServiceAccount", synced(r))
		}
	})

	t.Run("canary ConfigMaps in the release namespace only", func(t *testing.T) {
		client, err := kubernetes.NewForConfig(asSA)
		if err != nil {
			t.Fatal(err)
		}
		cms := client.CoreV1().ConfigMaps(ns)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rvsync-canary-test"}, Data: map[string]string{"beat": "1"}}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create canary: %v", err)
		}
		created.Data["beat"] = "2"
		if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update canary: %v", err)
		}
		if _, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("get canary: %v", err)
		}
		if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete canary: %v", err)
		}
		_, err = client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("creating a ConfigMap outside the release namespace: want forbidden, got %v", err)
		}
		_, err = client.CoreV1().Secrets(ns).Get(ctx, "any", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("getting a Secret: want forbidden, got %v", err)
		}
	})

	t.Run("a missing rule is reported as forbidden", func(t *testing.T) {
		const removed = "deployments.apps"
		cr, err := m.One("ClusterRole")
		if err != nil {
			t.Fatal(err)
		}
		cr = cr.DeepCopy()
		withoutResource(t, cr.Object, removed)
		if err := a.Apply(ctx, chart.Manifests{cr}); err != nil {
			t.Fatal(err)
		}
		url, stop := runExporter(t, cfg, asSA)
		defer stop()
		waitMetric(t, url, removed+" reports forbidden", func(m testenv.Metrics) bool {
			return m.Sum(catalog.ListErrors.Name, map[string]string{
				catalog.LabelResource: removed, catalog.LabelReason: catalog.ReasonForbidden,
			}) > 0
		})
		for _, r := range watched {
			if r != removed {
				waitMetric(t, url, r+" still synced", synced(r))
			}
		}
		final, err := testenv.Scrape(url)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := final.Value(catalog.InformerSynced.Name, map[string]string{catalog.LabelResource: removed}); v != 0 {
			t.Errorf("%s synced without list/watch permission", removed)
		}
	})
}

// testSecureMetricsRBAC runs the exporter with secure metrics as the
// chart's ServiceAccount, with the chart's RBAC applied: its ClusterRole
// lets it review tokens and access, so a ServiceAccount listed in
// metrics.readers scrapes /metrics (200) and another one is refused (403),
// while /healthz needs no token. Without the review rules not even the
// reader gets the metrics.
func testSecureMetricsRBAC(t *testing.T, env *testenv.Env) {
	a := applier(t, env)
	const ns, release, reader, other = "rvsync-secure", "secure", "scraper", "other"
	values := secureValues(reader, nil)
	values["watchedResources"] = []string{"configmaps", "namespaces"}
	m := render(t, chart.Options{Release: release, Namespace: ns, Values: values})
	core, _ := m.Split()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.Apply(ctx, core); err != nil {
		t.Fatal(err)
	}
	if err := a.EnsureNamespace(ctx, readerNamespace, nil); err != nil {
		t.Fatal(err)
	}
	// TokenRequest tokens of the reader and of another ServiceAccount
	token := func(name string) string {
		t.Helper()
		sas := env.Client.CoreV1().ServiceAccounts(readerNamespace)
		if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		tr, err := sas.CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	readerToken, otherToken := token(reader), token(other)
	cfg, raw := exporterConfig(t, m)
	if !cfg.SecureMetrics {
		t.Fatalf("config without secureMetrics:\n%s", raw)
	}
	sa := into[corev1.ServiceAccount](t, m, "ServiceAccount")
	asSA := impersonating(env, ns, sa.Name)
	// status GETs url as a Kubernetes client holding token would: bearer
	// token, TLS (the certificate is self-signed, so unverified)
	status := func(url, token string) int {
		t.Helper()
		c, err := rest.HTTPClientFor(&rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("a reader scrapes, another ServiceAccount is forbidden", func(t *testing.T) {
		url, stop := runExporter(t, cfg, asSA)
		defer stop()
		testenv.WaitFor(t, time.Minute, "the reader's scrape answered 200", func() (bool, error) { return status(url, readerToken) == http.StatusOK, nil })
		if code := status(url, otherToken); code != http.StatusForbidden {
			t.Errorf("a ServiceAccount not in metrics.readers: status %d, want 403", code)
		}
		if code := status(strings.TrimSuffix(url, "/metrics")+"/healthz", ""); code != http.StatusOK {
			t.Errorf("/healthz without a token: status %d, want 200 (the probes carry none)", code)
		}
	})

	t.Run("without the review rules the reader gets nothing", func(t *testing.T) {
		cr, err := m.Named("ClusterRole", fullname(t, m))
		if err != nil {
			t.Fatal(err)
		}
		cr = cr.DeepCopy()
		rules, _ := cr.Object["rules"].([]any)
		cr.Object["rules"] = slices.DeleteFunc(slices.Clone(rules), func(r any) bool {
			return slices.Contains(r.(map[string]any)["verbs"].([]any), any("create"))
		})
		if err := a.Apply(ctx, chart.Manifests{cr}); err != nil {
			t.Fatal(err)
		}
		url, stop := runExporter(t, cfg, asSA)
		defer stop()
		testenv.WaitFor(t, time.Minute, "/healthz answered", func() (bool, error) {
			return status(strings.TrimSuffix(url, "/metrics")+"/healthz", "") == http.StatusOK, nil
		})
		if code := status(url, readerToken); code == http.StatusOK {
			t.Errorf("the reader scraped although the exporter may not review tokens")
		}
	})
}

// withoutResource removes a plural.group from the rules of a rendered
// ClusterRole, dropping a rule left without resources.
func withoutResource(t *testing.T, cr map[string]any, name string) {
	t.Helper()
	plural, group, _ := strings.Cut(name, ".")
	rules, _ := cr["rules"].([]any)
	var kept []any
	found := false
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _ := rule["apiGroups"].([]any)
		resources, _ := rule["resources"].([]any)
		if slices.Contains(groups, any(group)) && slices.Contains(resources, any(plural)) {
			found = true
			resources = slices.DeleteFunc(slices.Clone(resources), func(v any) bool { return v == plural })
			if len(resources) == 0 {
				continue
			}
			rule["resources"] = resources
		}
		kept = append(kept, rule)
	}
	if !found {
		t.Fatalf("ClusterRole has no rule for %s", name)
	}
	cr["rules"] = kept
}

// testPodSecurityRestricted creates the chart's pod in a namespace that
// enforces the "restricted" Pod Security Standard: it is admitted. A copy
// that allows privilege escalation is refused, so the check is live.
func testPodSecurityRestricted(t *testing.T, env *testenv.Env) {
	a := applier(t, env)
	const ns = "rvsync-restricted"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := a.EnsureNamespace(ctx, ns, chart.RestrictedNamespaceLabels); err != nil {
		t.Fatal(err)
	}
	pods := env.Client.CoreV1().Pods(ns)
	admit := func(name string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the chart's %s pod is not admitted under the restricted Pod Security Standard: %v", name, err)
		}
		return pod
	}
	m := render(t, chart.Options{Release: "psa", Namespace: ns})
	core, _ := m.Split()
	if err := a.Apply(ctx, core); err != nil {
		t.Fatal(err)
	}
	pod := admit("exporter", into[appsv1.Deployment](t, m, "Deployment").Spec.Template)
	// the sharded StatefulSet's pod, with secure metrics and their
	// certificate Secret volume
	sharded, err := chart.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	sharded = slices.DeleteFunc(sharded, func(f string) bool { return !strings.HasSuffix(f, "/sharded-secure-values.yaml") })
	if len(sharded) != 1 {
		t.Fatal("no ci/sharded-secure-values.yaml scenario")
	}
	ms := render(t, chart.Options{Release: "psa-sharded", Namespace: ns, ValuesFiles: sharded})
	core, _ = ms.Split()
	if err := a.Apply(ctx, core); err != nil {
		t.Fatal(err)
	}
	admit("exporter-shard", into[appsv1.StatefulSet](t, ms, "StatefulSet").Spec.Template)
	bad := pod.DeepCopy()
	bad.Name = "escalating"
	escalate := true
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &escalate
	_, err = pods.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod allowing privilege escalation: want a PodSecurity rejection, got %v", err)
	}
}
