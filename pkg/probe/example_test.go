package probe_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

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
