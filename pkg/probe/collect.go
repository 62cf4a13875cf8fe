package probe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// snapshot is the scrape-time state of one watched resource.
type snapshot struct {
	Resource string

	// RVs holds whether the resource versions below are known integers: false
	// before the first probe or list, and for opaque (non-integer) RVs.
	HeadKnown     bool
	HeadRV        uint64
	InformerKnown bool
	InformerRV    uint64
	// LagKnown is true once both RVs were known at a probe.
	LagKnown bool
	Lag      uint64

	StalenessKnown   bool
	StalenessSeconds float64

	Synced  bool
	Objects int

	// Convergence is set for resources tracked for observedGeneration.
	Convergence *convergenceSnapshot

	// CanaryLastDelivered is the Unix time of the latest canary delivery (0: none).
	CanaryLastDelivered float64
}

// convergenceSnapshot is the scrape-time state of generation convergence.
type convergenceSnapshot struct {
	Unconverged   int
	OldestSeconds float64
}

var (
	descHeadRV      = newDesc(catalog.HeadResourceVersion)
	descInformerRV  = newDesc(catalog.InformerResourceVersion)
	descLag         = newDesc(catalog.ResourceVersionLag)
	descStaleness   = newDesc(catalog.CacheStaleness)
	descSynced      = newDesc(catalog.InformerSynced)
	descObjects     = newDesc(catalog.Objects)
	descUnconverged = newDesc(catalog.UnconvergedObjects)
	descOldest      = newDesc(catalog.OldestUnconverged)
	descCanaryLast  = newDesc(catalog.CanaryLastDelivered)
)

// gaugeCollector turns the trackers' snapshots into gauges at scrape time.
type gaugeCollector struct{ snapshots func() []snapshot }

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHeadRV, descInformerRV, descLag, descStaleness, descSynced, descObjects, descUnconverged, descOldest, descCanaryLast} {
		ch <- d
	}
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, resource string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, resource)
	}
	for _, s := range c.snapshots() {
		r := s.Resource
		if s.HeadKnown {
			gauge(descHeadRV, float64(s.HeadRV), r)
		}
		if s.InformerKnown {
			gauge(descInformerRV, float64(s.InformerRV), r)
		}
		if s.LagKnown {
			gauge(descLag, float64(s.Lag), r)
		}
		if s.StalenessKnown {
			gauge(descStaleness, s.StalenessSeconds, r)
		}
		gauge(descSynced, boolFloat(s.Synced), r)
		gauge(descObjects, float64(s.Objects), r)
		if s.Convergence != nil {
			gauge(descUnconverged, float64(s.Convergence.Unconverged), r)
			gauge(descOldest, s.Convergence.OldestSeconds, r)
		}
		if s.CanaryLastDelivered > 0 {
			gauge(descCanaryLast, s.CanaryLastDelivered, r)
		}
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
