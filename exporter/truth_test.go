//go:build integration

package exporter

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
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
	env, procs, ctx := restorable(t, "restore")
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
	// the canary writes every second: those that answer until etcd stops
	// are of the lost history (here none do: etcd stops serving at SIGTERM
	// and takes ~7s to exit), those after it of the restored one
	var atStop testenv.Metrics
	procs.OnEtcdStopped = func() { atStop = r.metrics(t) }
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
	writesBefore := success(atStop)
	t.Logf("etcd stopped %.1fs after the restore began; %.0f canary writes answered in between", procs.EtcdStopped.Sub(restoredAt).Seconds(), writesBefore-success(before))
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
		// a write may commit in the lost history until etcd stops (which
		// takes seconds on a loaded machine): the last one proves the
		// cache fresh up to then, not later
		if stale, ok := m.Value(catalog.CacheStaleness.Name, res("configmaps")); ok && knownAt != 0 && stale < time.Since(procs.EtcdStopped).Seconds()-1 {
			t.Fatalf("%.0fs after the restore began, %.1fs after etcd stopped (a canary write answered by %.0fs): staleness %.1fs while the cache holds the lost history; want at least %.1fs",
				since, time.Since(procs.EtcdStopped).Seconds(), knownAt, stale, time.Since(procs.EtcdStopped).Seconds()-1)
		}
		if knownAt != 0 {
			judged++
			if ahead == 1 {
				aheadScrapes++
			}
		}
		// judged from the next scrape on: the counter moves just before the
		// write's RV is checked
		if knownAt == 0 && success(m) > writesBefore+1 { // +1: a write committed before etcd stopped may answer just after
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

// Row 12 of issue #26 on a real control plane: etcd restored from a backup
// and kube-apiserver restarted on it, writes resume, then the informers'
// connection stalls 15 s and is released.
//
// What is true: the exporter's informer, like every client-go informer,
// does not relist. Its watch, broken by the restart, resumes from its
// resource version, which is of the lost history and above the restored
// etcd's revision; kube-apiserver's cacher accepts a watch from a revision
// it has not reached and sends nothing (no bookmark either) until etcd's
// revision passes it, then the new history's writes above it only. The
// store keeps the lost history's objects and misses the new history's
// writes below its old RV, until it relists. The test shows it on a
// controller's informer of its own (the objects written after the snapshot
// stay in its store, while a List no longer returns them), and checks that
// the exporter never calls that cache fresh, through the 15 s stall too.
//
// The recovery is a relist, as the runbook says (restart informer
// clients): once the exporter restarted, staleness is back under
// rowTwelveFresh within rowTwelveRecovery, and after a 15 s stall it
// recovers as fast as after the same stall before the restore (the
// control).
func TestEtcdRestoreThenStall(t *testing.T) {
	const (
		ns                = "row12"
		stall             = 15 * time.Second
		rowTwelveFresh    = 5.0 // seconds: a busy resource's healthy staleness here (2 writes/s, a canary write and a head probe a second)
		rowTwelveRecovery = 30 * time.Second
		lost              = 100 // objects the restore loses
	)
	env, procs, ctx := restorable(t, ns)
	proxy, proxied := env.Proxy(t, env.Config)
	cfg := canaryConfig("canary-row12", 20*time.Second)
	r := startExporter(t, cfg, proxied, env.Config)
	r.waitSynced(t, "configmaps")
	go testenv.Churn(ctx, env.Client, ns, 10, 2)
	ctrl := controllerCache(ctx, t, env.Config, ns)

	stale := configMapStaleness
	describe := describeConfigMaps
	fresh := func(r *running, what string) {
		t.Helper()
		r.waitMetric(t, 3*time.Minute, what, func(m testenv.Metrics) bool {
			s, ok := stale(m)
			return ok && s < rowTwelveFresh
		})
	}
	// stallAndRelease stalls the informers' connection, releases it and
	// returns how long after the release staleness was under the bound
	// (-1: not within rowTwelveRecovery).
	stallAndRelease := func(r *running, name string) time.Duration {
		t.Helper()
		proxy.Stall()
		time.Sleep(stall) // the fault under test lasts this long
		proxy.Release()
		released := time.Now()
		for since := time.Duration(0); since <= rowTwelveRecovery; since = time.Since(released) {
			m := r.metrics(t)
			if s, ok := stale(m); ok && s < rowTwelveFresh {
				t.Logf("%s: %.1fs after the release: %s", name, since.Seconds(), describe(m))
				return since
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("%s: %v after the release: %s", name, rowTwelveRecovery, describe(r.metrics(t)))
		return -1
	}

	fresh(r, "fresh before the control stall")
	control := stallAndRelease(r, "control")
	if control < 0 {
		t.Fatalf("control: staleness not under %vs within %v of the release of a %v stall", rowTwelveFresh, rowTwelveRecovery, stall)
	}

	snapshot := t.TempDir() + "/etcd"
	if err := procs.SnapshotEtcd(snapshot, false); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, ns, "lost", lost); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the controller's cache holds the objects the restore will lose", func() (bool, error) {
		return lostObjects(ctrl) == lost, nil
	})
	fresh(r, "fresh past the snapshot")
	restored := time.Now()
	if err := procs.RestoreEtcd(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver back on the restored etcd after %v", time.Since(restored).Round(time.Second))

	// What is true, then what the exporter says: until etcd's revision
	// passes the informers' old RV their watches deliver nothing; then the
	// new history's writes flow again, on top of the lost objects.
	live, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range live.Items {
		if strings.HasPrefix(cm.Name, "lost-") {
			t.Fatalf("the restored etcd holds %s, written after the snapshot", cm.Name)
		}
	}
	judge := func(m testenv.Metrics, when string) {
		t.Helper()
		since := time.Since(restored).Seconds()
		if s, ok := stale(m); ok && s < since-rowTwelveFresh {
			t.Errorf("%s: staleness %.1fs %.0fs after the restore, while the informers' stores hold %d objects of the lost history", when, s, since, lostObjects(ctrl))
		}
	}
	delivering := func(m testenv.Metrics) bool {
		silence, ok := m.Value(catalog.WatchSilence.Name, res("configmaps"))
		return ok && silence < 3
	}
	var resumed time.Duration
	testenv.WaitFor(t, 4*time.Minute, "the informers' watches delivering again", func() (bool, error) {
		m, err := testenv.Scrape(r.url)
		if err != nil {
			return false, err
		}
		judge(m, "while the watches wait")
		if !delivering(m) || time.Since(restored) < 20*time.Second {
			return false, nil
		}
		resumed = time.Since(restored)
		t.Logf("%.0fs after the restore the watches deliver again: %s; the controller's cache holds %d lost objects", resumed.Seconds(), describe(m), lostObjects(ctrl))
		return true, nil
	})
	if n := lostObjects(ctrl); n != lost {
		t.Fatalf("the controller's cache holds %d of the %d lost objects after its watch resumed; the mechanism under test is gone (did client-go relist?)", n, lost)
	}
	m := r.metrics(t)
	judge(m, "after the watches resumed")
	if v := m.Sum(catalog.Relists.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelReason: catalog.RelistExpired}) +
		m.Sum(catalog.Relists.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelReason: catalog.RelistError}); v != 0 {
		t.Logf("the exporter's informer relisted %v times (its cache may be right)", v)
	}
	// the stall of row 12: the cache was wrong before it and is after it
	proxy.Stall()
	time.Sleep(stall)
	proxy.Release()
	for released := time.Now(); time.Since(released) < 30*time.Second; time.Sleep(time.Second) {
		judge(r.metrics(t), "after the stall")
	}
	t.Logf("30s after the stall's release: %s; the controller's cache holds %d lost objects", describe(r.metrics(t)), lostObjects(ctrl))

	// the recovery: informers that relist (a restarted exporter's)
	r.stop()
	restarted := time.Now()
	r = startExporter(t, cfg, proxied, env.Config)
	fresh(r, "fresh after the exporter restarted")
	t.Logf("fresh %v after the exporter restarted", time.Since(restarted).Round(100*time.Millisecond))
	after := stallAndRelease(r, "after the restore and a relist")
	t.Logf("a %v stall: staleness under %vs %v after the release before the restore, %v after it once relisted", stall, rowTwelveFresh, control.Round(10*time.Millisecond), after.Round(10*time.Millisecond))
	if after < 0 {
		t.Errorf("row 12: after an etcd restore and a relist, a %v stall: staleness not under %vs within %v of the release", stall, rowTwelveFresh, rowTwelveRecovery)
	}
}

// Row 12 as it failed 1 run in 6 under load, made certain: the head
// probe and the canary (their own connection, through a second fault
// proxy) stall before the writes the restore loses and are released once
// kube-apiserver is back on the restored etcd. So no head sample and no
// canary write of the lost history answers: no head goes back, no write
// lands below one of the canary's own, and no regression can be counted.
// What is left is the informer: its RV, of the lost history, is above
// every read and write after the restore; when etcd's new history passes
// it, its watch delivers again on top of the lost objects. The exporter
// must not call that store fresh (it did, 0.4 s stale 42 s after the
// restore): it moved on from an RV that later reads and writes
// contradicted, and stays ahead of the head until it lists again.
func TestEtcdRestoreTheHeadProbeMissed(t *testing.T) {
	const (
		ns    = "missed"
		lost  = 100 // objects the restore loses
		slack = 5.0 // seconds
	)
	env, procs, ctx := restorable(t, ns)
	probeProxy, probeCfg := env.Proxy(t, env.Config)
	r := startExporter(t, canaryConfig("canary-missed", 20*time.Second), env.Config, probeCfg)
	r.waitSynced(t, "configmaps")
	go testenv.Churn(ctx, env.Client, ns, 10, 2)
	ctrl := controllerCache(ctx, t, env.Config, ns)
	r.waitMetric(t, 3*time.Minute, "fresh before the snapshot", func(m testenv.Metrics) bool {
		s, ok := configMapStaleness(m)
		return ok && s < slack
	})
	snapshot := t.TempDir() + "/etcd"
	if err := procs.SnapshotEtcd(snapshot, false); err != nil {
		t.Fatal(err)
	}
	probeProxy.Stall()
	if _, err := testenv.WriteConfigMaps(ctx, env.Client, ns, "lost", lost); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the controller's cache holds the objects the restore will lose", func() (bool, error) {
		return lostObjects(ctrl) == lost, nil
	})
	r.waitMetric(t, time.Minute, "the exporter's store holds them too", func(m testenv.Metrics) bool {
		objects, _ := m.Value(catalog.Objects.Name, res("configmaps"))
		return objects >= lost
	})
	restored := time.Now()
	if err := procs.RestoreEtcd(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	probeProxy.Release()
	t.Logf("kube-apiserver back on the restored etcd after %v; head probe and canary released", time.Since(restored).Round(time.Second))
	judge := func(m testenv.Metrics, when string) {
		t.Helper()
		since := time.Since(restored).Seconds()
		if s, ok := configMapStaleness(m); ok && s < since-slack {
			t.Errorf("%s: staleness %.1fs %.0fs after the restore, while the informers' stores hold %d objects of the lost history: %s", when, s, since, lostObjects(ctrl), describeConfigMaps(m))
		}
	}
	testenv.WaitFor(t, 4*time.Minute, "the informers' watches delivering again", func() (bool, error) {
		m, err := testenv.Scrape(r.url)
		if err != nil {
			return false, err
		}
		judge(m, "while the watches wait")
		silence, ok := m.Value(catalog.WatchSilence.Name, res("configmaps"))
		if !ok || silence >= 3 || time.Since(restored) < 20*time.Second {
			return false, nil
		}
		t.Logf("%.0fs after the restore the watches deliver again: %s", time.Since(restored).Seconds(), describeConfigMaps(m))
		return true, nil
	})
	if n := lostObjects(ctrl); n != lost {
		t.Fatalf("the controller's cache holds %d of the %d lost objects after its watch resumed; the mechanism under test is gone (did client-go relist?)", n, lost)
	}
	for resumed := time.Now(); time.Since(resumed) < 30*time.Second; time.Sleep(time.Second) {
		judge(r.metrics(t), "after the watches resumed")
	}
	m := r.metrics(t)
	t.Logf("30s later: %s", describeConfigMaps(m))
	if v, _ := m.Value(catalog.ResourceState.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelState: catalog.StateAheadOfHead}); v != 1 {
		t.Errorf("state not ahead_of_head while the store holds objects of the lost history: %s", describeConfigMaps(m))
	}
}

func configMapStaleness(m testenv.Metrics) (float64, bool) {
	return m.Value(catalog.CacheStaleness.Name, res("configmaps"))
}

// describeConfigMaps says, in one line, what a scrape shows of configmaps.
func describeConfigMaps(m testenv.Metrics) string {
	s, ok := configMapStaleness(m)
	lag, lagOK := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
	var state string
	for _, st := range catalog.States() {
		if v, _ := m.Value(catalog.ResourceState.Name, map[string]string{catalog.LabelResource: "configmaps", catalog.LabelState: st}); v == 1 {
			state = st
		}
	}
	head, _ := m.Value(catalog.HeadResourceVersion.Name, res("configmaps"))
	informer, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
	silence, _ := m.Value(catalog.WatchSilence.Name, res("configmaps"))
	objects, _ := m.Value(catalog.Objects.Name, res("configmaps"))
	return fmt.Sprintf("staleness %.1f (%v), RV lag %v (%v), state %q, head %v, informer %v, silence %.1f, objects %v, relists %v, regressions %v",
		s, ok, lag, lagOK, state, head, informer, silence, objects, m.Sum(catalog.Relists.Name, res("configmaps")),
		m.Sum(catalog.ResourceVersionRegressions.Name, res("configmaps")))
}

// controllerCache runs a controller's cache of the ConfigMaps of ns (a
// client-go informer of object metadata, connected directly, not through
// the fault proxy) until ctx ends.
func controllerCache(ctx context.Context, t *testing.T, cfg *rest.Config, ns string) cache.Store {
	t.Helper()
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inf := metadatainformer.NewFilteredMetadataInformer(client, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, 0, cache.Indexers{}, nil)
	go inf.Informer().RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("the controller's cache did not sync")
	}
	return inf.Informer().GetStore()
}

// lostObjects counts the objects named lost-* in a store.
func lostObjects(s cache.Store) int {
	n := 0
	for _, k := range s.ListKeys() {
		if strings.Contains(k, "/lost-") {
			n++
		}
	}
	return n
}

// restorable starts a control plane of the test's own, whose etcd it may
// snapshot and restore, with namespace ns; ctx ends with the test. The
// exporters it starts trace their head samples (traceSamples).
func restorable(t *testing.T, ns string) (*testenv.Env, *controlplane.Processes, context.Context) {
	t.Helper()
	traceSamples(t)
	env := testenv.StartT(t, testenv.Options{})
	procs, err := env.Processes(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.EnsureNamespace(ctx, env.Client, ns); err != nil {
		t.Fatal(err)
	}
	return env, procs, ctx
}

// traceSamples logs every head sample and canary write with its verdict
// (verbosity 2) for the rest of the test, unless RVSYNC_TEST_V says
// otherwise: the restore tests fail rarely, under load, and only that
// trace tells afterwards what the exporter saw (go test prints a test's
// log when it fails).
func traceSamples(t *testing.T) {
	if os.Getenv("RVSYNC_TEST_V") == "" {
		t.Setenv("RVSYNC_TEST_V", "2")
	}
}
