package probe_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Instrument the cache of a controller-runtime manager: the informers your
// controllers read from report the rvsync signals on the manager's /metrics.
func ExampleMonitor_InstrumentManager() {
	cfg := ctrl.GetConfigOrDie()
	mon := probe.New(probe.Options{
		Controller: "my-operator", // label telling this process apart
		HeadProbe:  cfg,           // optional: RV lag and staleness need it
	})
	opts := ctrl.Options{}
	mon.InstrumentManager(&opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		panic(err)
	}
	if err := mon.Register(metrics.Registry, nil); err != nil {
		panic(err)
	}
	if err := mgr.Add(mon); err != nil { // runs the head probe
		panic(err)
	}
	// ... set up controllers, then:
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

// Instrument an informer of client-go's SharedInformerFactory.
func ExampleMonitor_InformerFunc() {
	var cfg *rest.Config // your client configuration
	client := kubernetes.NewForConfigOrDie(cfg)
	mon := probe.New(probe.Options{HeadProbe: cfg})
	factory := informers.NewSharedInformerFactory(client, 0)
	factory.InformerFor(&corev1.ConfigMap{}, mon.InformerFunc(client.CoreV1().RESTClient(),
		corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{}))
	configMaps := factory.Core().V1().ConfigMaps() // the instrumented informer
	_ = configMaps.Informer()

	ctx := context.Background()
	factory.Start(ctx.Done())
	go func() { _ = mon.Run(ctx) }()
}
