// Package probe measures how far Kubernetes informer caches trail the API
// server, and exports the measurements under the metric names of package
// catalog, which the rvsync-slo dashboards and alerts use.
//
// A Monitor keeps one tracker per watched resource. Each informer's
// ListerWatcher is wrapped so that every List page, streaming watch-list,
// watch event, bookmark and error passes the tracker on its way to the
// reflector; a head probe per RV space (a consistent List with limit=1, on a
// connection of its own) records a bounded timeline of the API server's
// current resource version. From these the tracker derives RV lag, cache
// staleness, event delivery lag, List and watch-list durations, relists by
// reason, watch errors and RV regressions; a Canary adds exact delivery
// latency, and convergence tracking the time controllers take to observe a
// new generation.
//
// The whole public surface:
//
//   - New and Options build a Monitor; Options.HeadProbe turns the head
//     probe on (off by default for embedded use: without it, lag and
//     staleness are not computed, every other signal is).
//   - Monitor.Register registers the metric families; Monitor.Start runs the
//     head probes (a Monitor is a controller-runtime manager.Runnable).
//   - Monitor.Instrument measures an informer of your own (package
//     ctrlcache does it for every informer of a controller-runtime manager).
//   - Monitor.NewInformer and Resource build the metadata-only informers the
//     rvsync exporter runs (object keys only, or generations with
//     Resource.ObservedGenerationPath).
//   - Monitor.NewCanary, CanaryOptions and Canary write a heartbeat object
//     (annotation rvsync.io/heartbeat) and time its delivery.
//
// Nothing on the scrape path talks to the API server, and the per-event path
// does not allocate on the steady path.
package probe
