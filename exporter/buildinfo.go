package exporter

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// BuildInfo identifies the running binary in rvsync_build_info and
// --version; the linker sets it in cmd/exporter.
type BuildInfo struct {
	Version  string
	Revision string
}

// collector exports rvsync_build_info with value 1.
func (b BuildInfo) collector() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalog.BuildInfo.Name, Help: catalog.BuildInfo.Help}, catalog.BuildInfo.Labels)
	g.WithLabelValues(b.Version, b.Revision, runtime.Version()).Set(1)
	return g
}
