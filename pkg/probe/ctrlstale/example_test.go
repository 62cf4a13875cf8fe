package ctrlstale_test

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlcache"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlstale"
)

// Check one reconcile in a hundred for stale cache reads, with at most one
// live read per second: the stale-read ratio appears per resource on the
// manager's /metrics.
func ExampleHook() {
	cfg := ctrl.GetConfigOrDie()
	mon := probe.New(probe.Options{Controller: "my-operator", HeadProbe: cfg})
	opts := ctrl.Options{}
	ctrlcache.Hook(mon, &opts)
	ctrlstale.Hook(mon, &opts, probe.StaleReadOptions{Fraction: 0.01, ReadsPerSecond: 1})
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		panic(err)
	}
	if err := mon.Register(metrics.Registry); err != nil {
		panic(err)
	}
	if err := mgr.Add(mon); err != nil {
		panic(err)
	}
	// ... set up controllers; wrap a reconciler to also time the cache
	// update -> reconcile read of the object it was triggered for:
	var r reconcile.Reconciler // yours
	_ = ctrlstale.Triggered(r)
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
