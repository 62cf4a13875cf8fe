package probe

import (
	"io"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Benchmarks of the scrape path with 200 resources (the default
// maxResources). Run with
//
//	go test -run '^$' -bench . -benchmem ./pkg/probe
//
// They report; they assert nothing about speed.

const benchResources = 200

// benchRegistry returns a registry with every family of 200 resources
// populated as an exporter watching them has them: all gauges known; per
// resource the delivery-lag histogram, List-duration histograms of both
// kinds and results (the probe creates them up front) and the relist,
// watch-start, regression and dropped-sample counters; one head-probe
// series and one canary (one RV space, one canary resource); convergence
// for three resources; a few error series.
func benchRegistry(b *testing.B) *prometheus.Registry {
	b.Helper()
	snaps := make([]snapshot, benchResources)
	m := newMetrics()
	for i := range snaps {
		r := "resource" + strconv.Itoa(i) + ".example.com"
		snaps[i] = snapshot{
			Resource: r, HeadKnown: true, HeadRV: 123456, InformerKnown: true, InformerRV: 123400,
			LagKnown: true, Lag: 56, StalenessKnown: true, StalenessSeconds: 1.5, Synced: true, Objects: 250,
		}
		m.EventDeliveryLag.WithLabelValues(r).Observe(0.01)
		// the steady state: each informer synced once by watch-list; list
		// duration series of other kinds and results appear only when used
		m.ListDuration.WithLabelValues(r, catalog.KindWatchList, catalog.ResultSuccess).Observe(0.1)
		for _, reason := range []string{catalog.RelistInitial, catalog.RelistExpired, catalog.RelistError} {
			m.Relists.WithLabelValues(r, reason).Inc()
		}
		m.WatchStarts.WithLabelValues(r).Inc()
		m.Regressions.WithLabelValues(r).Add(0)
		m.TimelineDropped.WithLabelValues(r).Add(0)
		switch {
		case i == 0: // the head probe's source and the canary resource
			m.ListDuration.WithLabelValues(r, catalog.KindProbe, catalog.ResultSuccess).Observe(0.01)
			m.CanaryDeliveryLatency.WithLabelValues(r).Observe(0.01)
			m.CanaryWrites.WithLabelValues(r, catalog.ResultSuccess).Inc()
			m.CanaryLost.WithLabelValues(r).Add(0)
			snaps[i].CanaryLastDelivered = 1.8e9
		case i <= 3:
			snaps[i].Convergence = &convergenceSnapshot{Unconverged: 1, OldestSeconds: 3}
			m.GenerationConvergence.WithLabelValues(r).Observe(2)
		case i%20 == 0:
			m.WatchErrors.WithLabelValues(r, catalog.ReasonExpired).Inc()
			m.ListErrors.WithLabelValues(r, catalog.ReasonForbidden).Inc()
		}
	}
	reg := prometheus.NewRegistry()
	if err := m.register(reg, func() []snapshot { return snaps }); err != nil {
		b.Fatal(err)
	}
	return reg
}

// BenchmarkGather200 collects every family of 200 resources.
func BenchmarkGather200(b *testing.B) {
	reg := benchRegistry(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScrape200 is a whole scrape of 200 resources: gather and encode,
// as promhttp does, in the text format and in the protobuf format that
// Prometheus 3 asks for first.
func BenchmarkScrape200(b *testing.B) {
	b.Run("text", func(b *testing.B) { benchScrape(b, expfmt.NewFormat(expfmt.TypeTextPlain)) })
	b.Run("protobuf", func(b *testing.B) { benchScrape(b, expfmt.NewFormat(expfmt.TypeProtoDelim)) })
}

func benchScrape(b *testing.B, format expfmt.Format) {
	reg := benchRegistry(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkGaugeCollect200 is the scrape-time gauges alone.
func BenchmarkGaugeCollect200(b *testing.B) {
	snaps := make([]snapshot, benchResources)
	for i := range snaps {
		snaps[i] = snapshot{Resource: "r" + strconv.Itoa(i), HeadKnown: true, InformerKnown: true, LagKnown: true, StalenessKnown: true}
	}
	c := &gaugeCollector{snapshots: func() []snapshot { return snaps }}
	ch := make(chan prometheus.Metric, 16)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Collect(ch)
	}
	b.StopTimer()
	close(ch)
	<-done
}
