//go:build integration

package ctrlcache_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlcache"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A real controller-runtime manager with a toy ConfigMap reconciler: after
// Hook, its own /metrics carries the rvsync families for the informers its
// cache created, and a stall of its connection shows in them as staleness.
func TestHook(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	proxy, proxied := env.Proxy(t, env.Config)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mon := probe.New(probe.Options{Controller: "toy-operator", HeadProbe: env.Config, ProbeInterval: time.Second, Logger: testr.New(t)})
	addr := freeAddr(t)
	opts := ctrl.Options{Scheme: scheme.Scheme, Metrics: metricsserver.Options{BindAddress: addr}}
	ctrlcache.Hook(mon, &opts)
	mgr, err := ctrl.NewManager(proxied, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Register(ctrlmetrics.Registry); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(mon); err != nil {
		t.Fatal(err)
	}
	var reconciles atomic.Int64
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		reconciles.Add(1)
		return reconcile.Result{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	url := fmt.Sprintf("http://%s/metrics", addr)
	cm := map[string]string{catalog.LabelResource: "configmaps", catalog.LabelController: "toy-operator"}
	wait := func(msg string, cond func(testenv.Metrics) bool) {
		t.Helper()
		testenv.WaitFor(t, 2*time.Minute, msg, func() (bool, error) {
			m, err := testenv.Scrape(url)
			return err == nil && cond(m), err
		})
	}
	wait("configmaps synced on the manager's /metrics", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.InformerSynced.Name, cm)
		_, lag := m.Value(catalog.ResourceVersionLag.Name, cm)
		return v == 1 && lag
	})
	if err := testenv.EnsureNamespace(ctx, env.Client, "toy"); err != nil {
		t.Fatal(err)
	}
	const writes = 10
	proxy.Stall()
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, "toy", "cm", writes); err != nil {
		t.Fatal(err)
	}
	wait("staleness of the stalled manager cache", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.CacheStaleness.Name, cm)
		return v >= 5
	})
	before := reconciles.Load()
	proxy.Release()
	wait("staleness back after release", func(m testenv.Metrics) bool {
		v, ok := m.Value(catalog.CacheStaleness.Name, cm)
		return ok && v < 5
	})
	testenv.WaitFor(t, time.Minute, "the reconciler saw the held writes", func() (bool, error) {
		return reconciles.Load() >= before+writes, nil
	})
	// the informer is the manager's own: its cache holds the objects
	var list corev1.ConfigMapList
	if err := mgr.GetCache().List(ctx, &list, client.InNamespace("toy")); err != nil || len(list.Items) != writes {
		t.Fatalf("manager cache lists %d ConfigMaps in toy (err %v); want %d", len(list.Items), err, writes)
	}
}
