package main

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/workload"
)

// The benchmark's resources, as the programs name them (plural.group), and
// as apiserver_request_total labels them (plural).
const (
	configMaps = "configmaps"
	secrets    = "secrets"
	widgets    = "widgets.bench.rvsync.io"
)

// benchResources are the watched resources; object i is of
// benchResources[i%3].
var benchResources = []string{configMaps, secrets, widgets}

var widgetGVR = schema.GroupVersionResource{Group: "bench.rvsync.io", Version: "v1", Resource: "widgets"}

//go:embed crd.yaml
var widgetCRD []byte

// installWidgets installs the Widget custom resource and waits until it is
// served.
func installWidgets(cfg *rest.Config) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(widgetCRD, &crd); err != nil {
		return fmt.Errorf("crd.yaml: %w", err)
	}
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}, MaxTime: 2 * time.Minute})
	return err
}

// loader writes the benchmark's objects: ConfigMaps and Secrets over
// protobuf, Widgets (JSON only) through the dynamic client; no client-side
// rate limit.
type loader struct {
	typed   kubernetes.Interface
	widgets dynamic.NamespaceableResourceInterface
}

func newLoader(cfg *rest.Config) (*loader, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.UserAgent = "rvsync-bench"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pb := rest.CopyConfig(cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typed, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, err
	}
	return &loader{typed: typed, widgets: dyn.Resource(widgetGVR)}, nil
}

// objectSet names the benchmark's objects: n objects, object i of resource
// benchResources[i%3], spread round-robin over namespaces bench-0 …
// bench-(namespaces-1).
type objectSet struct {
	n, namespaces int
}

func (s objectSet) resource(i int) string { return benchResources[i%len(benchResources)] }
func (s objectSet) namespace(i int) string {
	return "bench-" + strconv.Itoa(i/len(benchResources)%s.namespaces)
}
func (s objectSet) name(i int) string { return "checkout-" + strconv.Itoa(i) }

// count is how many of the n objects are of resource.
func (s objectSet) count(resource string) int {
	for k, r := range benchResources {
		if r == resource {
			return (s.n - k + len(benchResources) - 1) / len(benchResources)
		}
	}
	return 0
}

// meta is object i's metadata as a typical application object carries it:
// the recommended labels, two annotations and an owner; the API server adds
// managed fields for each writer (the creation and, once churned, the
// churn's field manager).
func (s objectSet) meta(i int) metav1.ObjectMeta {
	ns := s.namespace(i)
	return metav1.ObjectMeta{
		Namespace: ns,
		Name:      s.name(i),
		Labels: map[string]string{
			"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": ns,
			"app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "rvsync-bench",
			"app.kubernetes.io/version": "1.42.0",
		},
		Annotations: map[string]string{
			"bench.rvsync.io/description":       "object created by rvsync-bench for the overhead benchmark",
			"deployment.kubernetes.io/revision": strconv.Itoa(i % 17),
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout",
			UID: types.UID(fmt.Sprintf("5e0c1d2a-7b3f-4c8e-9a1d-%012d", i%1000)),
		}},
	}
}

// payload is the objects' data, with version so that every write changes
// them (an update that changes nothing writes nothing to etcd).
func payload(version int64) map[string]string {
	return map[string]string{"payload": strings.Repeat("x", 64), "version": strconv.FormatInt(version, 10)}
}

// create makes object i.
func (s objectSet) create(ctx context.Context, l *loader, i int) error {
	m := s.meta(i)
	var err error
	switch s.resource(i) {
	case configMaps:
		_, err = l.typed.CoreV1().ConfigMaps(m.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: m, Data: payload(0)}, metav1.CreateOptions{})
	case secrets:
		_, err = l.typed.CoreV1().Secrets(m.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: m, StringData: payload(0)}, metav1.CreateOptions{})
	case widgets:
		u, cerr := widget(m)
		if cerr != nil {
			return cerr
		}
		_, err = l.widgets.Namespace(m.Namespace).Create(ctx, u, metav1.CreateOptions{})
	}
	return err
}

func widget(m metav1.ObjectMeta) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.rvsync.io/v1", "kind": "Widget",
		"spec": map[string]any{"image": "registry.example.com/shop/checkout:1.42.0", "replicas": int64(3), "version": "0"},
	}}
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		return nil, err
	}
	u.Object["metadata"] = meta
	return u, nil
}

// churnManager is the field manager of the churn's writes.
const churnManager = "rvsync-churn"

// update changes object i: an unconditional PUT (no resourceVersion, no
// read first) for ConfigMaps and Secrets, a merge PATCH for Widgets (custom
// resources allow no unconditional update).
func (s objectSet) update(ctx context.Context, l *loader, i int, version int64) error {
	m := s.meta(i)
	opts := metav1.UpdateOptions{FieldManager: churnManager}
	var err error
	switch s.resource(i) {
	case configMaps:
		_, err = l.typed.CoreV1().ConfigMaps(m.Namespace).Update(ctx, &corev1.ConfigMap{ObjectMeta: m, Data: payload(version)}, opts)
	case secrets:
		_, err = l.typed.CoreV1().Secrets(m.Namespace).Update(ctx, &corev1.Secret{ObjectMeta: m, StringData: payload(version)}, opts)
	case widgets:
		patch := []byte(`{"spec":{"version":"` + strconv.FormatInt(version, 10) + `"}}`)
		_, err = l.widgets.Namespace(m.Namespace).Patch(ctx, m.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: churnManager})
	}
	return err
}

// churnRequest reports whether an apiserver_request_total series counts the
// churn's own writes (the programs' requests are the rest).
func churnRequest(k requestKey) bool {
	return (k.verb == "PUT" && (k.resource == configMaps || k.resource == secrets)) ||
		(k.verb == "PATCH" && k.resource == widgetGVR.Resource)
}

// createAll makes the namespaces and objects with workers concurrent
// writers, skipping objects that exist; it returns how many it created.
func (s objectSet) createAll(ctx context.Context, l *loader, workers int) (int64, error) {
	for ns := range s.namespaces {
		if err := workload.EnsureNamespace(ctx, l.typed, "bench-"+strconv.Itoa(ns)); err != nil {
			return 0, err
		}
	}
	var created, next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= s.n || ctx.Err() != nil {
					return
				}
				switch err := s.create(ctx, l, i); {
				case err == nil:
					created.Add(1)
				case apierrors.IsAlreadyExists(err):
				default:
					once.Do(func() { firstErr = fmt.Errorf("create %s %s/%s: %w", s.resource(i), s.namespace(i), s.name(i), err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return created.Load(), firstErr
}

// churnResult is what a churn period achieved.
type churnResult struct {
	writes, errors, skipped int64
}

// churn updates the objects round-robin (so every resource in turn) at rate
// writes per second, with workers concurrent writers, until ctx ends.
// Writes that cannot start on time (the API server is saturated) are
// skipped and counted rather than queued.
func (s objectSet) churn(ctx context.Context, l *loader, rate float64, workers int, version *atomic.Int64) churnResult {
	jobs := make(chan int, workers)
	var res churnResult
	var writes, errs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := s.update(wctx, l, i, version.Add(1)); err != nil {
					errs.Add(1)
				} else {
					writes.Add(1)
				}
				cancel()
			}
		})
	}
	const tick = 10 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start, sent, next := time.Now(), 0.0, 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-t.C:
			due := rate * now.Sub(start).Seconds()
			for ; sent < due; sent++ {
				select {
				case jobs <- next % s.n:
					next++
				default:
					res.skipped++
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	res.writes, res.errors = writes.Load(), errs.Load()
	return res
}
