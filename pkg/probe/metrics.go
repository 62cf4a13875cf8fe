package probe

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// metrics holds the event-driven families: counters and histograms that the
// probe updates as things happen. Gauges are computed at scrape time from
// the trackers instead (see gaugeCollector).
type metrics struct {
	EventDeliveryLag      *prometheus.HistogramVec
	ListDuration          *prometheus.HistogramVec
	CanaryDeliveryLatency *prometheus.HistogramVec
	GenerationConvergence *prometheus.HistogramVec
	StaleReadBehind       *prometheus.HistogramVec
	ReconcileReadDelay    *prometheus.HistogramVec
	StoreLag              *prometheus.HistogramVec

	DeliveryUnbounded *prometheus.CounterVec
	Relists           *prometheus.CounterVec
	ListErrors        *prometheus.CounterVec
	WatchStarts       *prometheus.CounterVec
	WatchErrors       *prometheus.CounterVec
	Regressions       *prometheus.CounterVec
	HeadProbeErrors   *prometheus.CounterVec
	TimelineDropped   *prometheus.CounterVec
	CanaryWrites      *prometheus.CounterVec
	CanaryLost        *prometheus.CounterVec
	StaleReadChecks   *prometheus.CounterVec
	StaleReads        *prometheus.CounterVec
}

// newMetrics builds every event-driven family from the catalog.
func newMetrics() *metrics {
	return &metrics{
		EventDeliveryLag:      newHistogramVec(catalog.EventDeliveryLag),
		ListDuration:          newHistogramVec(catalog.ListDuration),
		CanaryDeliveryLatency: newHistogramVec(catalog.CanaryDeliveryLatency),
		GenerationConvergence: newHistogramVec(catalog.GenerationConvergence),
		StaleReadBehind:       newHistogramVec(catalog.StaleReadBehind),
		ReconcileReadDelay:    newHistogramVec(catalog.ReconcileReadDelay),
		StoreLag:              newHistogramVec(catalog.StoreLag),
		DeliveryUnbounded:     newCounterVec(catalog.EventDeliveryUnbounded),
		Relists:               newCounterVec(catalog.Relists),
		ListErrors:            newCounterVec(catalog.ListErrors),
		WatchStarts:           newCounterVec(catalog.WatchStarts),
		WatchErrors:           newCounterVec(catalog.WatchErrors),
		Regressions:           newCounterVec(catalog.ResourceVersionRegressions),
		HeadProbeErrors:       newCounterVec(catalog.HeadProbeErrors),
		TimelineDropped:       newCounterVec(catalog.TimelineDropped),
		CanaryWrites:          newCounterVec(catalog.CanaryWrites),
		CanaryLost:            newCounterVec(catalog.CanaryLost),
		StaleReadChecks:       newCounterVec(catalog.StaleReadChecks),
		StaleReads:            newCounterVec(catalog.StaleReads),
	}
}

// register registers the event-driven families and a gauge collector that
// reads snaps at every scrape.
func (m *metrics) register(reg prometheus.Registerer, snaps func() []snapshot) error {
	cs := []prometheus.Collector{
		m.EventDeliveryLag, m.ListDuration, m.CanaryDeliveryLatency, m.GenerationConvergence,
		m.DeliveryUnbounded, m.Relists, m.ListErrors, m.WatchStarts, m.WatchErrors, m.Regressions, m.HeadProbeErrors,
		m.TimelineDropped, m.CanaryWrites, m.CanaryLost, m.StoreLag,
		m.StaleReadChecks, m.StaleReads, m.StaleReadBehind, m.ReconcileReadDelay,
		&gaugeCollector{snapshots: snaps},
	}
	var errs []error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func newHistogramVec(m catalog.Metric) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
}

func newCounterVec(m catalog.Metric) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
}

func newDesc(m catalog.Metric) *prometheus.Desc {
	return prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
}
