// Package collector builds the exporter's Prometheus collectors from the
// metric catalog: counter and histogram vectors that the probe observes on
// its hot path, and a collector that turns per-resource snapshots (RVs, lag,
// staleness, sync state, object counts) into gauges at scrape time.
//
// Nothing here talks to the API server; a scrape only reads state the probe
// already holds, so /metrics answers even while the API server hangs.
package collector
