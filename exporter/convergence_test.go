//go:build integration

package exporter

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// convergenceCase plays the controller for one object: the test bumps the
// generation, holds it for a known time, then writes the observed generation.
type convergenceCase struct {
	r        *running
	resource string
	client   dynamic.ResourceInterface
	name     string
}

func (c *convergenceCase) unconverged(t *testing.T, want float64) testenv.Metrics {
	t.Helper()
	return c.r.waitMetric(t, time.Minute, "unconverged objects", func(m testenv.Metrics) bool {
		v, ok := m.Value(catalog.UnconvergedObjects.Name, res(c.resource))
		return ok && v == want
	})
}

// observe writes status.observedGeneration = the object's generation.
func (c *convergenceCase) observe(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	u, err := c.client.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hold keeps a generation pending for at least d after the exporter saw it,
// checking that the oldest-unconverged age grows meanwhile.
func (c *convergenceCase) hold(t *testing.T, d time.Duration) {
	t.Helper()
	first := c.unconverged(t, 1)
	age0, _ := first.Value(catalog.OldestUnconverged.Name, res(c.resource))
	seen := time.Now()
	c.r.waitMetric(t, time.Minute, "oldest unconverged age grows", func(m testenv.Metrics) bool {
		age, _ := m.Value(catalog.OldestUnconverged.Name, res(c.resource))
		return age > age0+1
	})
	time.Sleep(time.Until(seen.Add(d)))
	c.observe(t)
	c.unconverged(t, 0)
}

// assertHistogram checks the convergence histogram: count samples, of
// which all but the first fast ones (converged at once) were held for at
// least atLeast seconds.
func (c *convergenceCase) assertHistogram(t *testing.T, count, fast uint64, atLeast float64) {
	t.Helper()
	m := c.r.metrics(t)
	h, ok := m.Histogram(catalog.GenerationConvergence.Name, res(c.resource))
	if !ok || h.GetSampleCount() != count {
		t.Fatalf("convergence histogram has %d samples; want %d", h.GetSampleCount(), count)
	}
	if below := mustCountBelow(t, h, 2.5); below > fast {
		t.Errorf("%d convergences under 2.5s; all but %d were held %vs", below, fast, atLeast)
	}
	if held := float64(count - fast); h.GetSampleSum() < held*atLeast {
		t.Errorf("convergences sum to %.2fs; want >= %v × %vs", h.GetSampleSum(), held, atLeast)
	}
}

// reportObserved makes resource's controller visibly report observed
// generations, as a live controller's objects do: a first object, with its
// observed generation written at once. Until some object of a resource
// reports one, objects without are counted apart, not as unconverged.
func reportObserved(t *testing.T, r *running, resource string, client dynamic.ResourceInterface, create func(name string)) {
	t.Helper()
	create("first")
	r.waitMetric(t, time.Minute, "first unobservable", func(m testenv.Metrics) bool {
		v, ok := m.Value(catalog.UnobservableObjects.Name, res(resource))
		return ok && v == 1
	})
	(&convergenceCase{r: r, resource: resource, client: client, name: "first"}).observe(t)
}

// The test plays the Deployment controller: a new generation stays
// unconverged for a known time until the test writes observedGeneration.
func TestDeploymentConvergence(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	if err := testenv.EnsureNamespace(ctx, env.Client, "converge"); err != nil {
		t.Fatal(err)
	}
	r := startExporter(t, config.Config{Resources: resources("deployments.apps")}, env.Config, nil)
	r.waitSynced(t, "deployments.apps")
	dyn := dynamic.NewForConfigOrDie(env.Config)
	c := &convergenceCase{r: r, resource: "deployments.apps", name: "web",
		client: dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("converge")}
	createDeployment := func(name string) {
		if _, err := env.Client.AppsV1().Deployments("converge").Create(ctx, testenv.NewDeployment("converge", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reportObserved(t, r, c.resource, c.client, createDeployment)
	createDeployment("web")
	const held = 3 * time.Second
	c.hold(t, held) // generation 1
	c.assertHistogram(t, 2, 1, held.Seconds())

	d, err := env.Client.AppsV1().Deployments("converge").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = new(int32(3))
	if _, err := env.Client.AppsV1().Deployments("converge").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.hold(t, held) // generation 2
	c.assertHistogram(t, 3, 1, held.Seconds())

	if err := env.Client.AppsV1().Deployments("converge").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.AppsV1().Deployments("converge").Create(ctx, testenv.NewDeployment("converge", "gone"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.unconverged(t, 1)
	if err := env.Client.AppsV1().Deployments("converge").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.unconverged(t, 0) // deleted objects leave the counts
}

// A CRD whose status has observedGeneration, installed at run time, is
// tracked once configured.
func TestCustomResourceConvergence(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	crd := widgetCRD()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}, MaxTime: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{Resources: []config.ResourceConfig{{Name: "widgets.example.com", Convergence: new(true)}}}
	r := startExporter(t, cfg, env.Config, nil)
	r.waitSynced(t, "widgets.example.com")
	client := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	create := func(name string) {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)},
		}}
		if _, err := client.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := &convergenceCase{r: r, resource: "widgets.example.com", client: client, name: "w1"}
	reportObserved(t, r, c.resource, client, create)
	create("w1")
	const held = 3 * time.Second
	c.hold(t, held)
	c.assertHistogram(t, 2, 1, held.Seconds())
	if m := c.r.metrics(t); m.Sum(catalog.UnobservableObjects.Name, res(c.resource)) != 0 {
		t.Errorf("unobservable widgets remain once the controller reports")
	}
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: new(obj(map[string]apiextensionsv1.JSONSchemaProps{
					"spec":   obj(map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}),
					"status": obj(map[string]apiextensionsv1.JSONSchemaProps{"observedGeneration": {Type: "integer"}}),
				}))},
			}},
		},
	}
}
