// Package probe measures how far Kubernetes informer caches trail the API
// server, and exports the measurements under the metric names of package
// catalog, which the rvsync-slo dashboards and alerts use.
//
// A Monitor keeps one resource per watched resource, and in it the state
// of each of the resource's informers. Each informer's ListerWatcher is
// wrapped so that every List page, streaming watch-list, watch event,
// bookmark and error passes its state on its way to the reflector; a head
// probe per RV space (a consistent List with limit=1, on a connection of its
// own) records a bounded timeline of the API server's current resource
// version, with each probe's request and response times. From these the
// monitor derives, for each resource, only what it can prove: cache
// staleness (since the cache provably held everything committed), the
// freshness proof period (the height of a quiet cache's staleness
// sawtooth), watch silence, RV lag measured on the resource's own
// deliveries, event delivery lag (a lower bound, or unbounded after a probe
// outage), List and watch-list durations, relists by reason, watch errors,
// RV regressions, and a state saying when lag and staleness are unknown
// (the head probe failing, resource versions that are not integers, an
// informer on another history than its etcd's, a resource the API server
// no longer serves). A Canary adds exact delivery latency, and convergence
// tracking the time controllers take to observe a new generation.
//
// # The way of one event
//
// A watch event runs one way, through files it never comes back to. On an
// informer the exporter builds (NewInformer), it is read off the wire by
// metawatch.go: metaWatch.run decodes it with package internal/wire down to
// the object's digest and resource version (a keyObject: one SHA-256, no
// object decoded), then
//
//  1. listwatch.go: instrumentedWatch.observe sees it, in the same
//     goroutine, and calls
//  2. informer.go: informer.received (stage 1, the wire: sign of life,
//     bookmark cadence) and informer.push (stage 2, the queue), where it
//     waits until the store holds it; then
//  3. keystore.go: client-go's reflector, in its goroutine across the
//     watch's channel, applies it to the key informer's store (no FIFO),
//     which tells
//  4. applied.go: informer.drain pops it from the queue and
//     informer.apply (stage 3, the proofs) hands it to (an informer of
//     your own, Instrument, tells drain through its handler notification,
//     informer.notified, in the same file)
//  5. internal/proof: Queue (which deltas the store holds), Proof (what
//     the store provably holds: RV, freshness, lag) over Space (the RV
//     space's head timeline) and Watch (the watch's liveness); pure code,
//     no locks, goroutines, clocks or client types (go list -deps
//     ./pkg/probe/internal/proof shows neither client-go's cache nor
//     client_golang; TestCoreImports checks it).
//
// A scrape reads the other way and writes nothing: collect.go
// (gaugeCollector.Collect) → monitor.go (Monitor.snapshots) → resource.go
// (resource.snapshot: the worst of its informers) → informer.go
// (informer.snapshot) → internal/proof (Proof.Snapshot). Head probes
// (head.go) and freshness reads (monitor.go) write the space's timeline;
// the canary (canary.go) writes its own writes' record, which stage 3
// reads.
//
// # Adding a gauge
//
// A per-resource gauge is two edits: its catalog entry (pkg/catalog: the
// Metric, listed in All), and one row of gauges in collect.go, the
// function of a resource's snapshot that yields its value or unknown:
//
//	{metric: catalog.NewGauge, value: func(s *snapshot) (float64, bool) { return s.X, s.XKnown }},
//
// Describe and Collect loop over the rows; `make generate` regenerates the
// metric reference.
//
// Before each expected bookmark of a quiet informer the monitor reads its
// resource consistently on the informer's own connection, which makes the
// API server's watch cache catch up with etcd, so the bookmark proves
// freshness whatever etcd's progress-notify interval (Options.NoFreshnessReads
// turns this off).
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
//     rvsync exporter runs (digests of object keys only, or generations with
//     Resource.ObservedGenerationPath).
//   - Monitor.NewCanary, CanaryOptions and Canary write a heartbeat object
//     (annotation rvsync.io/heartbeat) and time its delivery.
//   - Monitor.StaleReads, StaleReadOptions, StaleReads and StaleRead check
//     the cache reads of a sampled share of reconciles against a consistent
//     live read, under a hard limit on live reads (package ctrlstale hooks
//     it into a controller-runtime manager's client); off unless built.
//
// Every delta the wrapped watch receives waits in a small per-informer queue
// until the informer's store holds it (a handler notification of it, or of
// a later one, or the store's own resource version proves it, in order):
// informer RV, staleness, lag, delivery lag and canary delivery count only
// what the store holds, and the queue's depth, the wait of its oldest delta
// and each delta's wire-to-store time are exported (backpressure: a slow
// indexer or a starved informer reads as stale, not fresh).
//
// A List or a watch-list's initial events stream into the key informer's
// store item by item (keyStore.stage): a list is never held as objects.
//
// Nothing on the scrape path talks to the API server or waits for an
// informer's store, and the per-event path allocates one keyObject.
package probe
