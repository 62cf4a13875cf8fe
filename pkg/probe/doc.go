// Package probe measures how far Kubernetes informer caches trail the API
// server, and exports the measurements under the rvsync metric names that
// the rvsync-slo dashboards and alerts use.
//
// A Monitor owns one Tracker per watched resource. Each informer's
// ListerWatcher is wrapped (Monitor.Instrument) so that every List page,
// streaming watch-list, watch event, bookmark and error passes a tracker on
// its way to the reflector; a head probe per RV space (a consistent List with
// limit=1, on a connection of its own) records a bounded Timeline of the
// API server's current resource version. From these the tracker derives:
//
//   - RV lag: head RV minus informer RV at each probe;
//   - cache staleness: now minus the latest probe time whose head the
//     informer RV covers (a delivered canary confirms freshness too);
//   - event delivery lag: delivery time minus the first probe that saw the
//     event's RV, a lower bound;
//   - List and watch-list durations, relists by reason, watch errors, RV
//     regressions, and, optionally, canary delivery latency (Canary) and
//     generation convergence (NewConvergenceInformer).
//
// The rvsync exporter is built on this package's public API. Operators embed
// it in two ways: package ctrlcache hooks a controller-runtime
// manager's cache, and Monitor.InformerFunc instruments an informer of
// client-go's SharedInformerFactory. The head probe and the canary are off
// unless configured (Options.HeadProbe, Monitor.NewCanary); without a head
// probe, lag and staleness are not computed and everything else is.
//
// Nothing on the scrape path talks to the API server, and the per-event path
// does not allocate on the steady path.
package probe
