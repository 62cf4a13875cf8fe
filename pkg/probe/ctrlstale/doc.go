// Package ctrlstale hooks the sampled stale-read check of pkg/probe
// (probe.StaleReads) into a controller-runtime manager: the manager's
// client checks the cache reads (Get) of a sampled share of reconciles
// against a consistent live read, and the rvsync dashboards and alerts show
// the stale-read ratio per resource.
//
// It is a package of its own, like ctrlcache, so that programs using
// pkg/probe without controller-runtime do not link it.
package ctrlstale
