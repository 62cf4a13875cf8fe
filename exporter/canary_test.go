//go:build integration

package exporter

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// canaryConfig is a fast canary for tests: a write a second.
func canaryConfig(name string, deadline time.Duration) config.Config {
	cfg := config.Config{Resources: resources("configmaps")}
	cfg.Canary.Interval.Duration = time.Second
	cfg.Canary.Deadline.Duration = deadline
	cfg.Canary.Namespace = "default"
	cfg.Canary.Name = name
	return cfg
}

func deliveries(t *testing.T, m testenv.Metrics) *dto.Histogram {
	t.Helper()
	h, ok := m.Histogram(catalog.CanaryDeliveryLatency.Name, res("configmaps"))
	if !ok {
		t.Fatal("no canary delivery histogram")
	}
	return h
}

// The canary measures the watch delay exactly: with a known delay added to
// the informers' connection (the canary writes on its own), every delivery
// takes at least the delay, and on average the delay more than the same
// run's undisturbed deliveries (measured first, on this machine as loaded
// as it is now: CI's undisturbed deliveries took over a second under the
// load of its cold tool builds, 6 December).
func TestCanaryMeasuresWatchDelay(t *testing.T) {
	env := sharedEnv(t)
	const delay = 2500 * time.Millisecond
	// measure runs the canary with d added to the informers' connection
	// and returns the deliveries after it took effect (at least 8)
	measure := func(t *testing.T, d time.Duration) (h0, h *dto.Histogram, m testenv.Metrics) {
		proxy, proxied := env.Proxy(t, env.Config)
		r := startExporter(t, canaryConfig("canary-delay", 15*time.Second), proxied, env.Config)
		r.waitSynced(t, "configmaps")
		proxy.SetDelay(d)
		// samples that may predate the delay are excluded by counting from here
		start := r.waitMetric(t, time.Minute, "a first delivery", func(m testenv.Metrics) bool {
			return deliveries(t, m).GetSampleCount() > 0
		})
		h0 = deliveries(t, start)
		m = r.waitMetric(t, 2*time.Minute, "8 more canary deliveries", func(m testenv.Metrics) bool {
			return deliveries(t, m).GetSampleCount() >= h0.GetSampleCount()+8
		})
		if v, _ := m.Value(catalog.CanaryLost.Name, res("configmaps")); v != 0 {
			t.Errorf("%v canaries lost", v)
		}
		if v, _ := m.Value(catalog.CanaryLastDelivered.Name, res("configmaps")); time.Since(time.Unix(int64(v), 0)) > time.Minute {
			t.Errorf("last delivery timestamp %v is stale", v)
		}
		return h0, deliveries(t, m), m
	}
	mean := func(h0, h *dto.Histogram) float64 {
		return (h.GetSampleSum() - h0.GetSampleSum()) / float64(h.GetSampleCount()-h0.GetSampleCount())
	}
	var undisturbed float64
	t.Run("no delay", func(t *testing.T) {
		h0, h, _ := measure(t, 0)
		undisturbed = mean(h0, h)
		t.Logf("undisturbed deliveries: mean %.3fs", undisturbed)
		// well apart from the delayed ones, or the next case proves nothing
		if undisturbed >= delay.Seconds()/2 {
			t.Errorf("mean undisturbed delivery latency %.3fs; want under half the %v delay the next case adds", undisturbed, delay)
		}
	})
	t.Run("2.5s delay", func(t *testing.T) {
		h0, h, _ := measure(t, delay)
		got := mean(h0, h)
		t.Logf("delayed deliveries: mean %.3fs (undisturbed %.3fs)", got, undisturbed)
		if below := mustCountBelow(t, h, delay.Seconds()) - mustCountBelow(t, h0, delay.Seconds()); below > 0 {
			t.Errorf("%d deliveries faster than the %v delay", below, delay)
		}
		// the delay, plus what an undisturbed delivery took, plus a
		// second for the load's drift between the two cases
		if high := delay.Seconds() + undisturbed + 1; got < delay.Seconds() || got > high {
			t.Errorf("mean delivery latency %.3fs with %v added; want within [%v, %.3f]", got, delay, delay.Seconds(), high)
		}
	})
}

// A stalled watch loses canaries after the deadline; delivery resumes after
// release.
func TestCanaryLostOnStall(t *testing.T) {
	env := sharedEnv(t)
	proxy, proxied := env.Proxy(t, env.Config)
	r := startExporter(t, canaryConfig("canary-stall", 4*time.Second), proxied, env.Config)
	r.waitSynced(t, "configmaps")
	r.waitMetric(t, time.Minute, "a first delivery", func(m testenv.Metrics) bool {
		return deliveries(t, m).GetSampleCount() > 0
	})
	proxy.Stall()
	r.waitMetric(t, time.Minute, "a lost canary", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.CanaryLost.Name, res("configmaps"))
		return v >= 1
	})
	m := r.metrics(t)
	before := deliveries(t, m).GetSampleCount()
	lastBefore, _ := m.Value(catalog.CanaryLastDelivered.Name, res("configmaps"))
	proxy.Release()
	r.waitMetric(t, time.Minute, "deliveries resume after release", func(m testenv.Metrics) bool {
		last, _ := m.Value(catalog.CanaryLastDelivered.Name, res("configmaps"))
		return deliveries(t, m).GetSampleCount() > before+2 && last > lastBefore
	})
	if v, _ := r.metrics(t).Value(catalog.CanaryWrites.Name, map[string]string{"resource": "configmaps", "result": catalog.ResultSuccess}); v < 3 {
		t.Errorf("only %v successful canary writes", v)
	}
}
