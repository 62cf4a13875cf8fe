package collector

import (
	"errors"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
)

// Metrics holds the event-driven families: counters and histograms that the
// probe updates as things happen. Gauges are computed at scrape time from a
// Source instead (see Register).
type Metrics struct {
	EventDeliveryLag      *prometheus.HistogramVec
	ListDuration          *prometheus.HistogramVec
	WatchDeliveryLatency  *prometheus.HistogramVec
	GenerationConvergence *prometheus.HistogramVec

	Relists         *prometheus.CounterVec
	WatchStarts     *prometheus.CounterVec
	WatchErrors     *prometheus.CounterVec
	Regressions     *prometheus.CounterVec
	ProbeErrors     *prometheus.CounterVec
	TimelineDropped *prometheus.CounterVec
	CanaryWrites    *prometheus.CounterVec
	CanaryLost      *prometheus.CounterVec
}

// NewMetrics builds every event-driven family from the catalog.
func NewMetrics() *Metrics {
	return &Metrics{
		EventDeliveryLag:      newHistogramVec(catalog.EventDeliveryLag),
		ListDuration:          newHistogramVec(catalog.ListDuration),
		WatchDeliveryLatency:  newHistogramVec(catalog.WatchDeliveryLatency),
		GenerationConvergence: newHistogramVec(catalog.GenerationConvergence),
		Relists:               newCounterVec(catalog.Relists),
		WatchStarts:           newCounterVec(catalog.WatchStarts),
		WatchErrors:           newCounterVec(catalog.WatchErrors),
		Regressions:           newCounterVec(catalog.ResourceVersionRegressions),
		ProbeErrors:           newCounterVec(catalog.ProbeErrors),
		TimelineDropped:       newCounterVec(catalog.TimelineDropped),
		CanaryWrites:          newCounterVec(catalog.CanaryWrites),
		CanaryLost:            newCounterVec(catalog.CanaryLost),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.EventDeliveryLag, m.ListDuration, m.WatchDeliveryLatency, m.GenerationConvergence,
		m.Relists, m.WatchStarts, m.WatchErrors, m.Regressions, m.ProbeErrors,
		m.TimelineDropped, m.CanaryWrites, m.CanaryLost,
	}
}

// BuildInfo identifies the running binary in rvsync_build_info.
type BuildInfo struct {
	Version  string
	Revision string
}

// Register registers the event-driven families, a gauge collector reading
// src at every scrape, and (when build is not nil) rvsync_build_info.
func (m *Metrics) Register(reg prometheus.Registerer, src Source, build *BuildInfo) error {
	cs := append(m.collectors(), &gaugeCollector{src: src})
	if build != nil {
		cs = append(cs, buildInfoCollector(*build))
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

func buildInfoCollector(b BuildInfo) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalog.BuildInfo.Name, Help: catalog.BuildInfo.Help}, catalog.BuildInfo.Labels)
	g.WithLabelValues(b.Version, b.Revision, runtime.Version()).Set(1)
	return g
}
