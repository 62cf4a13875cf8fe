// Package ctrlcache hooks the informers of a controller-runtime
// manager's cache with a probe.Monitor: the informers an operator's
// controllers actually read from then report the rvsync signals, under the
// metric names the rvsync-slo dashboards and alerts use.
//
// It is a package of its own so that programs using pkg/probe without
// controller-runtime (the rvsync exporter among them) do not link it.
package ctrlcache
