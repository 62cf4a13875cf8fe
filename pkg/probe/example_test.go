package probe_test

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Instrument an informer of client-go's SharedInformerFactory: register an
// instrumented constructor for the type before asking the factory for it.
func ExampleMonitor_Instrument() {
	var cfg *rest.Config // your client configuration
	client := kubernetes.NewForConfigOrDie(cfg)
	mon := probe.New(probe.Options{HeadProbe: cfg})
	_ = mon.Register(prometheus.DefaultRegisterer)

	factory := informers.NewSharedInformerFactory(client, 0)
	factory.InformerFor(&corev1.ConfigMap{}, configMapInformer(mon))
	configMaps := factory.Core().V1().ConfigMaps() // the instrumented informer
	_ = configMaps.Lister()

	ctx := context.Background()
	factory.Start(ctx.Done())
	go func() { _ = mon.Start(ctx) }()
}

// configMapInformer is the factory's constructor of an instrumented
// ConfigMap informer.
func configMapInformer(mon *probe.Monitor) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	return func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.NewFilteredListWatchFromClient(c.CoreV1().RESTClient(), gvr.Resource, metav1.NamespaceAll, func(*metav1.ListOptions) {})
		return mon.Instrument(gvr, lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		})
	}
}

// Watch resources as the rvsync exporter does: metadata-only informers that
// keep object keys alone, a head probe per RV space, and a canary whose
// delivery is timed exactly.
func ExampleMonitor_NewInformer() {
	var cfg *rest.Config // your client configuration
	mon := probe.New(probe.Options{HeadProbe: cfg})
	_ = mon.Register(prometheus.DefaultRegisterer)
	ctx := context.Background()
	for _, r := range []probe.Resource{
		{GVR: corev1.SchemeGroupVersion.WithResource("configmaps")},
		{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ObservedGenerationPath: "status.observedGeneration"},
	} {
		inf, err := mon.NewInformer(cfg, r)
		if err != nil {
			panic(err)
		}
		go inf.RunWithContext(ctx)
	}
	canary, err := mon.NewCanary(cfg, probe.CanaryOptions{Namespace: "monitoring", Name: "rvsync-canary-0"})
	if err != nil {
		panic(err)
	}
	go canary.Run(ctx)
	_ = mon.Start(ctx)
}
