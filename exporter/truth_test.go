//go:build integration

package exporter

import (
	"context"
	"io"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// A head probe that RBAC refuses while the informers' watches stream (the
// probe's own credentials lost their rights, or a --probe-kubeconfig points
// elsewhere) is not a stalled watch: lag and staleness are unknown, the
// state says why, and the watch's silence shows it delivering.
func TestHeadProbeRefusedWhileWatchesStream(t *testing.T) {
	env := sharedEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.EnsureNamespace(ctx, env.Client, "refused"); err != nil {
		t.Fatal(err)
	}
	refused := rest.CopyConfig(env.Config)
	refused.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:refused:no-rights"}
	cfg := config.Config{Resources: resources("configmaps")}
	cfg.Canary.Enabled = new(false)
	r := startExporter(t, cfg, env.Config, refused)
	r.waitSynced(t, "configmaps")
	go testenv.Churn(ctx, env.Client, "refused", 5, 2)

	state := func(s string) map[string]string {
		return map[string]string{catalog.LabelResource: "configmaps", catalog.LabelState: s}
	}
	m := r.waitMetric(t, time.Minute, "state head_unknown", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.ResourceState.Name, state(catalog.StateHeadUnknown))
		return v == 1
	})
	// a minute of refused probes while events stream
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		m = r.metrics(t)
		if v, ok := m.Value(catalog.CacheStaleness.Name, res("configmaps")); ok {
			t.Fatalf("staleness %vs reported while every head probe is refused", v)
		}
		if v, ok := m.Value(catalog.ResourceVersionLag.Name, res("configmaps")); ok {
			t.Fatalf("RV lag %v reported while every head probe is refused", v)
		}
		if v, _ := m.Value(catalog.ResourceState.Name, state(catalog.StateOK)); v != 0 {
			t.Fatalf("state ok = %v while every head probe is refused", v)
		}
		time.Sleep(time.Second)
	}
	if silence, _ := m.Value(catalog.WatchSilence.Name, res("configmaps")); silence > 10 {
		t.Errorf("watch silence %vs while events stream every half second", silence)
	}
	if v := m.Sum(catalog.HeadProbeErrors.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelReason: catalog.ReasonForbidden}); v == 0 {
		t.Error("no forbidden head probe counted")
	}
}

// An etcd restored from a backup while kube-apiserver runs on: the exporter
// never reports the caches as fresh while they hold the lost, newer history.
// Canary writes (landing in the restored, older history) are not delivered
// at once by the memory of the lost one; the head's regression is counted;
// an informer RV ahead of the head shows as its own state, never as fresh.
func TestEtcdRestoreUnderARunningAPIServer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	procs, err := env.Processes(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.EnsureNamespace(ctx, env.Client, "restore"); err != nil {
		t.Fatal(err)
	}
	cfg := canaryConfig("canary-restore", 20*time.Second)
	cfg.Resources = resources("configmaps", "namespaces")
	r := startExporter(t, cfg, env.Config, nil)
	r.waitSynced(t, "configmaps", "namespaces")
	snapshot := t.TempDir() + "/etcd"
	if err := procs.SnapshotEtcd(snapshot, false); err != nil {
		t.Fatal(err)
	}
	// the history the restore loses: a few hundred revisions
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, "restore", "lost", 200); err != nil {
		t.Fatal(err)
	}
	r.waitMetric(t, time.Minute, "the informer past the snapshot", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.CacheStaleness.Name, res("configmaps"))
		return v < 5
	})
	before := r.metrics(t)
	restoredAt := time.Now()
	if err := procs.RestoreEtcdUnderAPIServer(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	// Watch for two minutes what the exporter says, scrape by scrape: the
	// API server's watch cache keeps serving the lost history (its reads
	// and bookmarks stay at the old, higher RVs) while the canary's writes
	// land in the restored one. Until the first of those writes answers,
	// nothing the exporter can see tells the lost history from a live one
	// (a consistent read answers at the watch cache's RV, above etcd's); from
	// then on it must never report the cache fresher than the restore.
	success := func(m testenv.Metrics) float64 {
		return m.Sum(catalog.CanaryWrites.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelResult: catalog.ResultSuccess})
	}
	writesBefore := success(before)
	var ahead float64
	var aheadScrapes, judged int // scrapes after knownAt, and those showing ahead_of_head
	var knownAt float64          // seconds after the restore when a canary write first answered
	for time.Since(restoredAt) < 2*time.Minute {
		m := r.metrics(t)
		since := time.Since(restoredAt).Seconds()
		ahead, _ = m.Value(catalog.ResourceState.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelState: catalog.StateAheadOfHead})
		head, _ := m.Value(catalog.HeadResourceVersion.Name, res("configmaps"))
		informer, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
		silence, _ := m.Value(catalog.WatchSilence.Name, res("configmaps"))
		t.Logf("%3.0fs after the restore: head %v, informer %v, silence %v, ahead %v, relists %v, regressions %v, canary lost %v",
			since, head, informer, silence, ahead, m.Sum(catalog.Relists.Name, res("configmaps")),
			m.Sum(catalog.ResourceVersionRegressions.Name, res("configmaps")), m.Sum(catalog.CanaryLost.Name, res("configmaps")))
		if stale, ok := m.Value(catalog.CacheStaleness.Name, res("configmaps")); ok && knownAt != 0 && stale < since-5 {
			t.Fatalf("%.0fs after the restore (a canary write answered by %.0fs): staleness %.0fs while the cache holds the lost history; want at least %.0fs",
				since, knownAt, stale, since-5)
		}
		if knownAt != 0 {
			judged++
			if ahead == 1 {
				aheadScrapes++
			}
		}
		// judged from the next scrape on: the counter moves just before the
		// write's RV is checked
		if knownAt == 0 && success(m) > writesBefore+1 { // +1: a write that answered before etcd stopped
			knownAt = since
		}
		time.Sleep(5 * time.Second)
	}
	if knownAt == 0 {
		t.Fatal("no canary write answered in the two minutes after the restore")
	}
	t.Logf("the first canary write answered by %.0fs after the restore began", knownAt)
	// the first bookmark of the lost history after the restore puts the
	// informer's RV above the writes: ahead of its etcd's head. The state
	// drops for a while at every write that lands below (the regression
	// resets the informer's RV until the stale cache's next bookmark), so it
	// shows most of the time, not all of it; RvsyncInformerAheadOfHead
	// reads it over 2m for that (alerts/testdata/flapping.test.yaml).
	t.Logf("ahead_of_head in %d of %d scrapes after the first answered write", aheadScrapes, judged)
	if 2*aheadScrapes < judged {
		t.Errorf("state ahead_of_head in %d of %d scrapes after the first answered write; want most", aheadScrapes, judged)
	}
	m := r.metrics(t)
	if got := m.Sum(catalog.ResourceVersionRegressions.Name, res("configmaps")) - before.Sum(catalog.ResourceVersionRegressions.Name, res("configmaps")); got == 0 {
		t.Error("no RV regression counted after the restore")
	}
	if got := m.Sum(catalog.CanaryLost.Name, res("configmaps")) - before.Sum(catalog.CanaryLost.Name, res("configmaps")); got == 0 {
		t.Error("no canary write counted lost, though the watch cache never delivers the restored history's writes")
	}
}
