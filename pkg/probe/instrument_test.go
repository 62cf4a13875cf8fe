//go:build integration

package probe_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// The Instrument example runs: client-go's factory hands out the
// instrumented informer, which syncs and counts objects.
func TestInstrumentFactoryInformer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.EnsureNamespace(ctx, env.Client, "factory"); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, "factory", "cm", 5); err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(env.Config)
	mon := probe.New(probe.Options{HeadProbe: env.Config, ProbeInterval: time.Second})
	reg := prometheus.NewRegistry()
	if err := mon.Register(reg); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	factory.InformerFor(&corev1.ConfigMap{}, configMapInformer(mon))
	lister := factory.Core().V1().ConfigMaps().Lister()
	factory.Start(ctx.Done())
	go func() { _ = mon.Start(ctx) }()
	defer func() { cancel(); factory.Shutdown() }()
	cm := map[string]string{catalog.LabelResource: "configmaps"}
	testenv.WaitFor(t, time.Minute, "the factory's informer synced, counted and probed", func() (bool, error) {
		m, err := testenv.Gather(reg)
		if err != nil {
			return false, err
		}
		synced, _ := m.Value(catalog.InformerSynced.Name, cm)
		objects, _ := m.Value(catalog.Objects.Name, cm)
		_, lag := m.Value(catalog.ResourceVersionLag.Name, cm)
		return synced == 1 && objects >= 5 && lag, nil
	})
	if got, err := lister.ConfigMaps("factory").List(k8slabels.Everything()); err != nil || len(got) != 5 {
		t.Fatalf("factory lister has %d ConfigMaps (err %v); want 5: the instrumented informer is not the factory's", len(got), err)
	}
}
