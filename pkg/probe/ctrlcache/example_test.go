package ctrlcache_test

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlcache"
)

// Hook the cache of a controller-runtime manager: the informers your
// controllers read from report the rvsync signals on the manager's /metrics.
func ExampleHook() {
	cfg := ctrl.GetConfigOrDie()
	mon := probe.New(probe.Options{
		Controller: "my-operator", // label telling this process apart
		HeadProbe:  cfg,           // optional: RV lag and staleness need it
	})
	opts := ctrl.Options{}
	ctrlcache.Hook(mon, &opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		panic(err)
	}
	if err := mon.Register(metrics.Registry); err != nil {
		panic(err)
	}
	if err := mgr.Add(mon); err != nil { // runs the head probe
		panic(err)
	}
	// ... set up controllers, then:
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
