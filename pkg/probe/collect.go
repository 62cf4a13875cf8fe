package probe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// snapshot is the scrape-time state of one watched resource. A value whose
// Known flag is false is not exported: unknown is not 0.
type snapshot struct {
	Resource string
	Space    string
	State    string // a catalog.State* value

	HeadKnown     bool
	HeadRV        uint64
	InformerKnown bool
	InformerRV    uint64
	LagKnown      bool
	Lag           uint64

	StalenessKnown     bool
	StalenessSeconds   float64
	ProofPeriodKnown   bool
	ProofPeriodSeconds float64
	HeadAgeKnown       bool
	HeadAgeSeconds     float64

	SilenceKnown          bool
	SilenceSeconds        float64
	BookmarkPeriodSeconds float64

	Synced  bool
	Objects int

	// QueueDepth is the deltas its worst informer received on the wire and
	// has not yet applied to its store; QueueOldestSeconds, how long the
	// oldest of them has waited.
	QueueDepth         int
	QueueOldestSeconds float64

	// Convergence is set for resources tracked for observedGeneration.
	Convergence *convergenceSnapshot

	// CanaryLastDelivered is the Unix time of the latest canary delivery (0: none).
	CanaryLastDelivered float64
}

// convergenceSnapshot is the scrape-time state of generation convergence.
type convergenceSnapshot struct {
	Unconverged   int
	Unobservable  int
	OldestSeconds float64
}

var (
	descHeadRV         = newDesc(catalog.HeadResourceVersion)
	descInformerRV     = newDesc(catalog.InformerResourceVersion)
	descLag            = newDesc(catalog.ResourceVersionLag)
	descStaleness      = newDesc(catalog.CacheStaleness)
	descProofPeriod    = newDesc(catalog.FreshnessProofPeriod)
	descSilence        = newDesc(catalog.WatchSilence)
	descBookmarkPeriod = newDesc(catalog.WatchBookmarkPeriod)
	descHeadAge        = newDesc(catalog.HeadAge)
	descState          = newDesc(catalog.ResourceState)
	descInfo           = newDesc(catalog.ResourceInfo)
	descSynced         = newDesc(catalog.InformerSynced)
	descObjects        = newDesc(catalog.Objects)
	descUnconverged    = newDesc(catalog.UnconvergedObjects)
	descUnobservable   = newDesc(catalog.UnobservableObjects)
	descOldest         = newDesc(catalog.OldestUnconverged)
	descCanaryLast     = newDesc(catalog.CanaryLastDelivered)
	descQueueDepth     = newDesc(catalog.StoreQueueDepth)
	descQueueOldest    = newDesc(catalog.StoreQueueOldest)
)

// gaugeCollector turns the trackers' snapshots into gauges at scrape time.
type gaugeCollector struct{ snapshots func() []snapshot }

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descHeadRV, descInformerRV, descLag, descStaleness, descProofPeriod, descSilence, descBookmarkPeriod,
		descHeadAge, descState, descInfo, descSynced, descObjects, descUnconverged, descUnobservable, descOldest, descCanaryLast,
		descQueueDepth, descQueueOldest,
	} {
		ch <- d
	}
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
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
		if s.ProofPeriodKnown {
			gauge(descProofPeriod, s.ProofPeriodSeconds, r)
		}
		if s.HeadAgeKnown {
			gauge(descHeadAge, s.HeadAgeSeconds, r)
		}
		if s.SilenceKnown {
			gauge(descSilence, s.SilenceSeconds, r)
		}
		gauge(descBookmarkPeriod, s.BookmarkPeriodSeconds, r)
		for _, st := range catalog.States() {
			gauge(descState, boolFloat(st == s.State), r, st)
		}
		gauge(descInfo, 1, r, s.Space)
		gauge(descSynced, boolFloat(s.Synced), r)
		gauge(descObjects, float64(s.Objects), r)
		gauge(descQueueDepth, float64(s.QueueDepth), r)
		gauge(descQueueOldest, s.QueueOldestSeconds, r)
		if s.Convergence != nil {
			gauge(descUnconverged, float64(s.Convergence.Unconverged), r)
			gauge(descUnobservable, float64(s.Convergence.Unobservable), r)
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
