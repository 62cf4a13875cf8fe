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
// takes at least the delay and on average little more; without it, well
// under a second.
func TestCanaryMeasuresWatchDelay(t *testing.T) {
	env := sharedEnv(t)
	for _, c := range []struct {
		name  string
		delay time.Duration
		// every sample is above low and the mean is within [low, high]
		low, high float64
	}{
		{"no delay", 0, 0, 0.5},
		{"2.5s delay", 2500 * time.Millisecond, 2.5, 3.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy, proxied := env.Proxy(t, env.Config)
			r := startExporter(t, canaryConfig("canary-delay", 15*time.Second), proxied, env.Config)
			r.waitSynced(t, "configmaps")
			proxy.SetDelay(c.delay)
			// samples that may predate the delay are excluded by counting from here
			start := r.waitMetric(t, time.Minute, "a first delivery", func(m testenv.Metrics) bool {
				return deliveries(t, m).GetSampleCount() > 0
			})
			h0 := deliveries(t, start)
			m := r.waitMetric(t, 2*time.Minute, "8 more canary deliveries", func(m testenv.Metrics) bool {
				return deliveries(t, m).GetSampleCount() >= h0.GetSampleCount()+8
			})
			h := deliveries(t, m)
			n := float64(h.GetSampleCount() - h0.GetSampleCount())
			mean := (h.GetSampleSum() - h0.GetSampleSum()) / n
			if mean < c.low || mean > c.high {
				t.Errorf("mean delivery latency %.3fs with %v added; want within [%v, %v]", mean, c.delay, c.low, c.high)
			}
			if c.delay > 0 {
				below := mustCountBelow(t, h, c.low) - mustCountBelow(t, h0, c.low)
				if below > 0 {
					t.Errorf("%d deliveries faster than the %v delay", below, c.delay)
				}
			} else if slow := h.GetSampleCount() - mustCountBelow(t, h, 1); slow > 0 {
				t.Errorf("%d undisturbed deliveries took over 1s", slow)
			}
			if v, _ := m.Value(catalog.CanaryLost.Name, res("configmaps")); v != 0 {
				t.Errorf("%v canaries lost", v)
			}
			if v, _ := m.Value(catalog.CanaryLastDelivered.Name, res("configmaps")); time.Since(time.Unix(int64(v), 0)) > time.Minute {
				t.Errorf("last delivery timestamp %v is stale", v)
			}
		})
	}
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
