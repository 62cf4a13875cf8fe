//go:build integration

package exporter

import (
	"context"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// While every connection to the API server hangs (informers, probe and
// canary all through a stalled proxy), /metrics keeps answering within a
// second, and reports lag and staleness as unknown rather than inventing
// them; the events held meanwhile are not counted as delivered at once;
// after release everything recovers without a restart.
func TestMetricsAnswerWhileAPIServerHangs(t *testing.T) {
	env := sharedEnv(t)
	proxy, proxied := env.Proxy(t, env.Config)
	cfg := canaryConfig("canary-hang", 5*time.Second)
	cfg.Resources = resources("configmaps", "namespaces")
	r := startExporter(t, cfg, proxied, proxied)
	r.waitSynced(t, "configmaps", "namespaces")
	r.waitMetric(t, time.Minute, "a first lag", func(m testenv.Metrics) bool {
		_, ok := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		return ok
	})
	before := r.metrics(t)
	proxy.Stall()
	// writes land while the exporter sees nothing: held by the stalled watch
	ctx := context.Background()
	if err := testenv.EnsureNamespace(ctx, env.Client, "hang"); err != nil {
		t.Fatal(err)
	}
	const writes = 20
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, "hang", "cm", writes); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(25 * time.Second)
	for scrapes := 0; time.Now().Before(deadline); scrapes++ {
		resp, err := client.Get(r.url)
		if err != nil {
			t.Fatalf("scrape %d during the hang: %v", scrapes, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d during the hang: %s", scrapes, resp.Status)
		}
	}
	m := r.metrics(t)
	state := map[string]string{catalog.LabelResource: "configmaps", catalog.LabelState: catalog.StateHeadUnknown}
	if v, _ := m.Value(catalog.ResourceState.Name, state); v != 1 {
		t.Errorf("state head_unknown = %v after a 25s hang of the whole API server; want 1", v)
	}
	if v, ok := m.Value(catalog.CacheStaleness.Name, res("configmaps")); ok {
		t.Errorf("staleness %vs reported while no head probe answers; want unknown", v)
	}
	proxy.Release()
	m = r.waitMetric(t, 2*time.Minute, "recovered after the hang", func(m testenv.Metrics) bool {
		stale, ok := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		return ok && stale < 5
	})
	// The held writes were committed during the hang: no probe bounds their
	// commit closer than "somewhere in the hang", so they are not recorded
	// as delivered in ~0s. Only the canary's writes can be committed after
	// the release and delivered at once: those sent after it, and those
	// sent during the hang that timed out in the exporter while the proxy
	// held their request, which reaches the API server on release (the
	// exporter counts them as failed, yet they commit), and the one write
	// that may be in flight at the last scrape (the canary writes one at a
	// time), committed and delivered but not yet counted.
	h0, _ := before.Histogram(catalog.EventDeliveryLag.Name, res("configmaps"))
	h1, _ := m.Histogram(catalog.EventDeliveryLag.Name, res("configmaps"))
	fast0, _ := testenv.CountBelow(h0, 5)
	fast1, _ := testenv.CountBelow(h1, 5)
	unbounded := m.Sum(catalog.EventDeliveryUnbounded.Name, res("configmaps")) - before.Sum(catalog.EventDeliveryUnbounded.Name, res("configmaps"))
	canaryWrites := m.Sum(catalog.CanaryWrites.Name, res("configmaps")) - before.Sum(catalog.CanaryWrites.Name, res("configmaps")) + 1
	if fast := float64(fast1 - fast0); fast > canaryWrites {
		t.Errorf("%v events recorded as delivered within 5s after a 25s hang, beside at most %v canary writes since it began (any result, one in flight); the %d held ones were not fast", fast, canaryWrites, writes)
	}
	if unbounded < writes {
		t.Errorf("%v events counted with an unknown delivery lag; want the %d held writes", unbounded, writes)
	}
}

// A watch connection reset mid-stream under churn: the informer reconnects
// and keeps up, other resources keep reporting.
func TestWatchConnectionReset(t *testing.T) {
	env := sharedEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.EnsureNamespace(ctx, env.Client, "reset"); err != nil {
		t.Fatal(err)
	}
	proxy, proxied := env.Proxy(t, env.Config)
	r := startExporter(t, config.Config{Resources: resources("configmaps", "namespaces")}, proxied, env.Config)
	r.waitSynced(t, "configmaps", "namespaces")
	go testenv.Churn(ctx, env.Client, "reset", 10, 10)
	// A reset watch resumes as a new watch, or as a relist when the
	// reflector restarts its list-and-watch (a streaming watch-list).
	starts := func(m testenv.Metrics) float64 {
		return m.Sum(catalog.WatchStarts.Name, res("configmaps")) + m.Sum(catalog.Relists.Name, res("configmaps"))
	}
	for range 3 {
		// Reset only a working connection: wait until the informer holds
		// what was committed after the previous reset (its new watch
		// delivers), or a reset could land while it is still dialling and
		// close nothing.
		head, _ := r.metrics(t).Value(catalog.HeadResourceVersion.Name, res("configmaps"))
		m := r.waitMetric(t, 2*time.Minute, "the watch delivering before the reset", func(m testenv.Metrics) bool {
			rv, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
			return rv >= head
		})
		before := starts(m)
		proxy.Reset()
		r.waitMetric(t, 2*time.Minute, "a new watch after the reset", func(m testenv.Metrics) bool { return starts(m) > before })
	}
	r.waitMetric(t, 2*time.Minute, "caught up after resets", func(m testenv.Metrics) bool {
		lag, _ := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		stale, _ := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		return lag < 50 && stale < 5
	})
	if v, _ := r.metrics(t).Value(catalog.ResourceVersionRegressions.Name, res("configmaps")); v != 0 {
		t.Errorf("%v RV regressions from connection resets", v)
	}
}

// A watched CRD deleted and re-created: the loss is reported as watch or
// list errors, the exporter keeps running, and the informer recovers once
// the CRD is back.
func TestCRDDeletedAndRecreated(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	crd := widgetCRD()
	crd.Name, crd.Spec.Names.Plural, crd.Spec.Names.Singular, crd.Spec.Names.Kind, crd.Spec.Names.ListKind =
		"gadgets.example.com", "gadgets", "gadget", "Gadget", "GadgetList"
	install := func() {
		t.Helper()
		c := crd.DeepCopy()
		c.ResourceVersion = ""
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{c}, MaxTime: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	install()
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	gadgets := dynamic.NewForConfigOrDie(env.Config).Resource(gvr).Namespace("default")
	create := func(name string) {
		t.Helper()
		testenv.WaitFor(t, time.Minute, "create "+name, func() (bool, error) {
			_, err := gadgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": name}}}, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	create("g1")
	cfg := config.Config{Resources: resources("gadgets.example.com", "namespaces")}
	r := startExporter(t, cfg, env.Config, nil)
	r.waitSynced(t, "gadgets.example.com")

	ext := apiextensionsclient.NewForConfigOrDie(env.Config)
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 2*time.Minute, "CRD gone", func() (bool, error) {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	r.waitMetric(t, 2*time.Minute, "objects of the deleted CRD leave the cache", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.Objects.Name, res("gadgets.example.com"))
		return v == 0
	})
	install()
	create("g2")
	r.waitMetric(t, 3*time.Minute, "the re-created CRD's objects are cached again", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.Objects.Name, res("gadgets.example.com"))
		return v == 1
	})
	m := r.metrics(t)
	if v, _ := m.Value(catalog.InformerSynced.Name, res("namespaces")); v != 1 {
		t.Error("namespaces stopped reporting while the CRD was gone")
	}
}
