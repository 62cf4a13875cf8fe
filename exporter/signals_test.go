//go:build integration

package exporter

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Under steady churn every resource syncs, and the churned resource's lag
// and staleness stay small at every scrape.
func TestSteadyChurn(t *testing.T) {
	env := sharedEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.EnsureNamespace(ctx, env.Client, "steady"); err != nil {
		t.Fatal(err)
	}
	names := []string{"configmaps", "namespaces", "serviceaccounts", "deployments.apps"}
	r := startExporter(t, config.Config{Resources: resources(names...)}, env.Config, nil)
	r.waitSynced(t, names...)

	writes := make(chan int, 1)
	go func() { writes <- testenv.Churn(ctx, env.Client, "steady", 20, 20) }()

	// 15 scrapes, one a second, while 20 writes/s land.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := range 15 {
		<-tick.C
		m := r.metrics(t)
		lag, okLag := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		stale, okStale := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		if !okLag || !okStale {
			t.Fatalf("scrape %d: lag or staleness missing for configmaps", i)
		}
		// one probe interval (1s, jittered) of writes plus headroom for a loaded machine
		if lag > 100 || stale > 5 {
			t.Errorf("scrape %d: configmaps lag %v revisions, staleness %vs; want small under steady churn", i, lag, stale)
		}
	}
	cancel()
	if n := <-writes; n < 100 {
		t.Fatalf("only %d churn writes landed", n)
	}
	m := r.metrics(t)
	h, ok := m.Histogram(catalog.EventDeliveryLag.Name, res("configmaps"))
	if !ok || h.GetSampleCount() < 100 {
		t.Fatalf("event delivery lag histogram has %d samples; want one per delivered write", h.GetSampleCount())
	}
	if p99 := testenv.Quantile(h, 0.99); p99 > 2.5 {
		t.Errorf("event delivery lag p99 = %vs on an undisturbed loopback watch", p99)
	}
	if v, _ := m.Value(catalog.Relists.Name, map[string]string{"resource": "configmaps", "reason": catalog.RelistInitial}); v != 1 {
		t.Errorf("initial relists = %v; want 1", v)
	}
	if v := m.Sum(catalog.Relists.Name, map[string]string{"resource": "configmaps", "reason": catalog.RelistExpired}); v != 0 {
		t.Errorf("expired relists = %v under steady churn", v)
	}
}

// A stalled informer connection (the probe connects directly) shows as
// staleness of about the stall's length and as watch silence; both recover
// after release, the held events are delivered with a measured lag of about
// the stall, and RV lag shows how far behind they were when they arrived.
func TestStalledWatch(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	if err := testenv.EnsureNamespace(ctx, env.Client, "stall"); err != nil {
		t.Fatal(err)
	}
	proxy, proxied := env.Proxy(t, env.Config)
	r := startExporter(t, config.Config{Resources: resources("configmaps", "namespaces")}, proxied, env.Config)
	r.waitSynced(t, "configmaps", "namespaces")
	r.waitMetric(t, time.Minute, "a first lag", func(m testenv.Metrics) bool {
		_, ok := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		return ok
	})
	mBefore := r.metrics(t)
	before, _ := mBefore.Histogram(catalog.EventDeliveryLag.Name, res("configmaps"))
	slowBefore := before.GetSampleCount() - mustCountBelow(t, before, 5)

	const writes = 30
	const stall = 12 * time.Second
	proxy.Stall()
	stalledAt := time.Now()
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, "stall", "cm", writes); err != nil {
		t.Fatal(err)
	}
	r.waitMetric(t, time.Minute, "staleness growing during the stall", func(m testenv.Metrics) bool {
		stale, _ := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		return stale >= 5
	})
	// Hold the stall for its known duration, then read staleness.
	time.Sleep(time.Until(stalledAt.Add(stall)))
	m := r.metrics(t)
	held := time.Since(stalledAt).Seconds()
	stale, _ := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
	// The cache was last provably fresh at the last probe before the stall,
	// at most one probe interval (1s + 10% jitter) before it began.
	if stale < held-2.5 {
		t.Errorf("staleness %.1fs after a %.1fs stall; want at least %.1fs", stale, held, held-2.5)
	}
	if silence, _ := m.Value(catalog.WatchSilence.Name, res("configmaps")); silence < held-2.5 {
		t.Errorf("watch silence %.1fs after a %.1fs stall; want at least %.1fs", silence, held, held-2.5)
	}
	proxy.Release()
	sawLag := 0.0
	m = r.waitMetric(t, time.Minute, "staleness and silence back near 0 after release", func(m testenv.Metrics) bool {
		lag, _ := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		sawLag = max(sawLag, lag)
		stale, _ := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		silence, _ := m.Value(catalog.WatchSilence.Name, res("configmaps"))
		return stale < 3 && silence < 3
	})
	// the held events were behind by the test's writes and the few other
	// commits of the stall (the canary's, the API server's own)
	if sawLag < 1 || sawLag > writes+10 {
		t.Errorf("RV lag peaked at %v after release; the held events were about %d revisions behind", sawLag, writes)
	}
	after, _ := m.Histogram(catalog.EventDeliveryLag.Name, res("configmaps"))
	// an event whose commit no head sample bounded (the probes 2
	// intervals and 5 s apart: a starved machine) is counted unbounded,
	// not measured: the truth of this run, not a number tuned on an idle
	// machine
	unbounded := m.Sum(catalog.EventDeliveryUnbounded.Name, res("configmaps")) - mBefore.Sum(catalog.EventDeliveryUnbounded.Name, res("configmaps"))
	if slow := after.GetSampleCount() - mustCountBelow(t, after, 5) - slowBefore; float64(slow)+unbounded < writes {
		// what else the release could have done with the held events:
		// a relist delivers them without a delivery lag
		t.Errorf("%d events delivered with lag > 5s and %v unbounded after a %v stall; want all %d held writes (deliveries %d -> %d; watch starts %v -> %v; relists %v -> %v)",
			slow, unbounded, stall, writes, before.GetSampleCount(), after.GetSampleCount(),
			mBefore.Sum(catalog.WatchStarts.Name, res("configmaps")), m.Sum(catalog.WatchStarts.Name, res("configmaps")),
			mBefore.Sum(catalog.Relists.Name, res("configmaps")), m.Sum(catalog.Relists.Name, res("configmaps")))
	}
}

func mustCountBelow(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	n, ok := testenv.CountBelow(h, le)
	if !ok {
		t.Fatalf("no bucket le=%v", le)
	}
	return n
}

// Latency added to the informers' connection shows in every List or
// watch-list they make, on both list paths; the probe, on its own
// connection, stays fast.
func TestListLatency(t *testing.T) {
	env := sharedEnv(t)
	const delay = time.Second
	for _, c := range []struct {
		name      string
		watchList bool
		kind      string
	}{
		{"watch-list", true, catalog.KindWatchList},
		{"classic list", false, catalog.KindList},
	} {
		t.Run(c.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, c.watchList)
			proxy, proxied := env.Proxy(t, env.Config)
			proxy.SetDelay(delay)
			r := startExporter(t, config.Config{Resources: resources("configmaps")}, proxied, env.Config)
			r.waitSynced(t, "configmaps")
			m := r.waitMetric(t, time.Minute, "probe durations", func(m testenv.Metrics) bool {
				h, ok := m.Histogram(catalog.ListDuration.Name, map[string]string{"resource": "configmaps", "kind": catalog.KindProbe})
				return ok && h.GetSampleCount() >= 3
			})
			h, ok := m.Histogram(catalog.ListDuration.Name, map[string]string{"resource": "configmaps", "kind": c.kind, "result": catalog.ResultSuccess})
			if !ok || h.GetSampleCount() == 0 {
				t.Fatalf("no successful %s duration recorded", c.kind)
			}
			if fast, _ := testenv.CountBelow(h, 1); fast > 0 {
				t.Errorf("%d of %d %s durations under %v with %v added latency", fast, h.GetSampleCount(), c.kind, delay, delay)
			}
			probe, _ := m.Histogram(catalog.ListDuration.Name, map[string]string{"resource": "configmaps", "kind": catalog.KindProbe})
			if p50 := testenv.Quantile(probe, 0.5); p50 >= delay.Seconds() {
				t.Errorf("probe p50 %vs: the probe went through the informers' slow connection", p50)
			}
		})
	}
}
