//go:build integration

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// canaryResource is the resource of the chart's default canary and the
// churned workload: its staleness is the one the scenarios watch.
const canaryResource = "configmaps"

// freshSeconds is the cache staleness under which a recovered informer
// counts as fresh again (the cache-staleness SLO's threshold).
const freshSeconds = slo.DefaultStalenessThresholdSeconds

// TestEndToEnd runs the scenarios in order on one stack; each later one
// starts from the state the earlier ones leave, the destructive ones last.
func TestEndToEnd(t *testing.T) {
	t.Parallel() // beside the etcd leader suite, on a stack of its own
	s := startStack(t, stackOptions{})
	t.Run("healthy_no_page", s.healthy)
	t.Run("watch_stalled_pages_and_resolves", s.watchStalled)
	t.Run("etcd_paused_head_unknown_no_false_stall", s.etcdPaused)
	t.Run("apiserver_restart_relists_without_regression", s.apiServerRestart)
	t.Run("etcd_restore_fires_rv_regression", s.etcdRestore)
	t.Run("dashboard_panels_have_data", s.dashboardPanels)
}

// healthy: once every informer synced and Prometheus evaluates the rules,
// a while of normal churn sends no page.
func (s *stack) healthy(t *testing.T) {
	s.scenario(t)
	s.waitMetrics(t, 3*time.Minute, "every informer synced", s.allSynced)
	s.prom.waitQuery(t, 2*time.Minute, fmt.Sprintf("count(%s == 1) == %d", catalog.InformerSynced.Name, len(s.resources)))
	s.prom.waitQuery(t, 2*time.Minute, slo.RuleObjective)
	// Long enough for every quiet resource to go through a bookmark period
	// and for the time-slice SLIs' 2m window to leave the initial list behind.
	const hold = 2 * time.Minute
	t.Logf("holding a healthy state for %v", hold)
	time.Sleep(hold) // the condition under test is that nothing happens
	s.assertNoPage(t, time.Time{})
}

// assertNoPage fails the test for every page notified that started after
// since and every page alert pending or firing in Prometheus.
func (s *stack) assertNoPage(t *testing.T, since time.Time) {
	t.Helper()
	for _, a := range s.hook.received() {
		if a.Status == "firing" && a.Labels["severity"] == slo.DefaultSeverityPage && a.StartsAt.After(since) {
			t.Errorf("a page: %s", a)
		}
	}
	as, err := s.prom.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if string(a.Labels["severity"]) == slo.DefaultSeverityPage {
			t.Errorf("a %s page alert: %s", a.State, a.Labels)
		}
	}
}

// watchStalled: the proxy holds every byte between the informers and the
// API server while the probe and canary run direct: the cache goes stale,
// RvsyncWatchStalled pages, and resolves after the release.
func (s *stack) watchStalled(t *testing.T) {
	s.scenario(t)
	stalled := time.Now()
	s.proxy.Stall()
	released := false
	t.Cleanup(func() {
		if !released {
			s.proxy.Release()
		}
	})
	page := s.hook.wait(t, 5*time.Minute, "a "+alerts.AlertWatchStalled+" page for "+canaryResource, func(a notifiedAlert) bool {
		return a.Status == "firing" && a.Labels["alertname"] == alerts.AlertWatchStalled &&
			a.Labels[catalog.LabelResource] == canaryResource && a.StartsAt.After(stalled)
	})
	t.Logf("paged %v after the stall: %s", page.Received.Sub(stalled).Round(time.Second), page)
	s.checkPage(t, page)
	s.assertOnePage(t, stalled)

	s.proxy.Release()
	released = true
	s.waitResolved(t, page, time.Now())
	s.waitFresh(t, time.Now())
	s.assertRunning(t)
}

// assertOnePage: every informer stalled at once is one incident, and the
// routing the project ships (docs/alertmanager.yaml) makes it one page.
// Once the stall of every resource has been paged, every page notified
// since went to the page receiver in one notification group (one
// PagerDuty incident), whatever the number of resources and alerts.
func (s *stack) assertOnePage(t *testing.T, since time.Time) {
	t.Helper()
	pages := func() []notifiedAlert {
		var out []notifiedAlert
		for _, a := range s.hook.received() {
			if a.Status == "firing" && a.Labels["severity"] == slo.DefaultSeverityPage && a.StartsAt.After(since) {
				out = append(out, a)
			}
		}
		return out
	}
	testenv.WaitFor(t, 4*time.Minute, fmt.Sprintf("the stall of all %d resources paged", len(s.resources)), func() (bool, error) {
		paged := map[string]bool{}
		for _, a := range pages() {
			if a.Labels["alertname"] == alerts.AlertWatchStalled {
				paged[a.Labels[catalog.LabelResource]] = true
			}
		}
		return len(paged) == len(s.resources), fmt.Errorf("%d of %d resources paged", len(paged), len(s.resources))
	})
	groups := map[string][]string{} // group key → alerts notified in it
	for _, a := range pages() {
		if a.Receiver != receiverPage {
			t.Errorf("a page went to receiver %q, not %q: %s", a.Receiver, receiverPage, a)
		}
		groups[a.GroupKey] = append(groups[a.GroupKey], a.Labels["alertname"]+"/"+a.Labels[catalog.LabelResource])
	}
	if len(groups) != 1 {
		t.Errorf("one incident paged in %d notification groups, want 1: %v", len(groups), groups)
	}
	for key, as := range groups {
		slices.Sort(as)
		t.Logf("one page: group %s holds %d notified alerts: %v", key, len(slices.Compact(as)), slices.Compact(as))
	}
}

// etcdPaused: etcd is frozen (SIGSTOP) for two minutes (a copy of its data
// is taken meanwhile for etcdRestore). The head probes time out, so lag and
// staleness become unknown (state head_unknown), not growing; the API
// server's watch cache keeps sending bookmarks, so the watches are not
// silent, and no stall is paged: the caches are as fresh as a frozen etcd.
// After SIGCONT the same exporter recovers.
func (s *stack) etcdPaused(t *testing.T) {
	s.scenario(t)
	paused := time.Now()
	if err := s.procs.Etcd.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := s.procs.Etcd.Resume(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)
	snapshot := filepath.Join(s.snapshotDir, "etcd")
	if err := s.procs.SnapshotEtcd(snapshot, true); err != nil {
		t.Fatalf("snapshot etcd: %v", err)
	}
	s.snapshot = snapshot

	unknown := map[string]string{catalog.LabelResource: canaryResource, catalog.LabelState: catalog.StateHeadUnknown}
	s.waitMetrics(t, 2*time.Minute, "the head unknown while etcd is frozen", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.ResourceState.Name, unknown)
		_, stale := m.Value(catalog.CacheStaleness.Name, res(canaryResource))
		return v == 1 && !stale
	})
	for time.Since(paused) < 2*time.Minute {
		time.Sleep(5 * time.Second) // the condition under test is that no page comes
	}
	if a, ok := s.hook.find(func(a notifiedAlert) bool {
		return a.Status == "firing" && a.Labels["alertname"] == alerts.AlertWatchStalled && a.StartsAt.After(paused)
	}); ok {
		t.Errorf("a stall paged while etcd was frozen and the watches delivered bookmarks: %s", a)
	}
	t.Logf("etcd frozen for %v: head unknown, no stall paged", time.Since(paused).Round(time.Second))
	resume()
	s.waitFresh(t, time.Now())
	s.assertRunning(t)
}

// apiServerRestart: kube-apiserver restarts on the same etcd while writes
// go on; the exporter reconnects (relists or new watches, counted) and sees no RV
// regression.
func (s *stack) apiServerRestart(t *testing.T) {
	s.scenario(t)
	before := s.metrics(t)
	if n := before.Sum(catalog.ResourceVersionRegressions.Name, nil); n != 0 {
		t.Errorf("%s = %v before any etcd restore", catalog.ResourceVersionRegressions.Name, n)
	}
	relists, starts := relistsOf(before, ""), before.Sum(catalog.WatchStarts.Name, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	restarted := time.Now()
	if err := s.procs.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	t.Logf("kube-apiserver back after %v", time.Since(restarted).Round(time.Second))
	// The informers reconnect by a new watch (the reflector retries one
	// refused while the server was down) or by a relist (its watch cache
	// starts at the current RV: 410; or the new server's authorizer not yet
	// ready: forbidden), whichever the timing gives.
	s.waitMetrics(t, 3*time.Minute, "reconnections counted (relists or new watches)", func(m testenv.Metrics) bool {
		return relistsOf(m, "") > relists || m.Sum(catalog.WatchStarts.Name, nil) > starts
	})
	s.waitFresh(t, time.Now())
	after := s.metrics(t)
	t.Logf("relists after sync %v → %v, watch starts %v → %v", relists, relistsOf(after, ""), starts, after.Sum(catalog.WatchStarts.Name, nil))
	if n := after.Sum(catalog.ResourceVersionRegressions.Name, nil); n != 0 {
		t.Errorf("a restart on the same etcd counted %v RV regressions", n)
	}
	if a, ok := s.hook.find(func(a notifiedAlert) bool {
		return a.Labels["alertname"] == alerts.AlertResourceVersionRegression
	}); ok {
		t.Errorf("a false RV-regression alert: %s", a)
	}
	s.assertRunning(t)
}

// etcdRestore: etcd is restored from the copy taken in etcdPaused and
// kube-apiserver restarted on it: resource versions go backwards, the
// exporter counts the regression, RvsyncResourceVersionRegression fires and
// reaches the webhook, no informer that has not listed since is called
// fresh, and once the exporter restarts (the runbook's recovery: restart
// informer clients) every informer is fresh again.
//
// An informer whose watch resumes at its RV, above the restored etcd's
// revision, is not told to relist: kube-apiserver accepts the watch and
// sends what the new history writes above that RV. Until it lists, its
// store may hold objects of the lost history, and the exporter says so
// (ahead of the head, staleness growing: RvsyncInformerAheadOfHead). Which
// informers relist on their own depends on timing (a watch that failed
// while the restarted server's authorizer was not ready relists): CI saw
// namespaces, which did not, at 230 s of staleness 3 min after the restore
// while the test waited for every informer to be fresh without a restart.
func (s *stack) etcdRestore(t *testing.T) {
	s.scenario(t)
	if s.snapshot == "" {
		t.Fatal("no etcd snapshot: the etcd pause scenario did not take one")
	}
	before := s.metrics(t)
	head, _ := before.Value(catalog.HeadResourceVersion.Name, res(canaryResource))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	restored := time.Now()
	if err := s.procs.RestoreEtcd(ctx, s.snapshot); err != nil {
		t.Fatalf("restore etcd: %v", err)
	}
	t.Logf("control plane back on the restored etcd after %v", time.Since(restored).Round(time.Second))
	m := s.waitMetrics(t, 3*time.Minute, "an RV regression counted", func(m testenv.Metrics) bool {
		return m.Sum(catalog.ResourceVersionRegressions.Name, nil) > 0
	})
	now, _ := m.Value(catalog.HeadResourceVersion.Name, res(canaryResource))
	t.Logf("head RV of %s: %v before the restore, %v after", canaryResource, head, now)
	s.prom.waitFiring(t, 3*time.Minute, alerts.AlertResourceVersionRegression, nil)
	a := s.hook.wait(t, 3*time.Minute, alerts.AlertResourceVersionRegression+" notified", func(a notifiedAlert) bool {
		return a.Status == "firing" && a.Labels["alertname"] == alerts.AlertResourceVersionRegression && a.StartsAt.After(restored)
	})
	t.Logf("notified %v after the restore: %s", a.Received.Sub(restored).Round(time.Second), a)
	s.checkAlert(t, a)
	m = s.metrics(t)
	since := time.Since(restored).Seconds()
	for _, r := range s.resources {
		relisted := relistsOf(m, r) > relistsOf(before, r)
		stale, known := m.Value(catalog.CacheStaleness.Name, res(r))
		ahead, _ := m.Value(catalog.ResourceState.Name, map[string]string{catalog.LabelResource: r, catalog.LabelState: catalog.StateAheadOfHead})
		t.Logf("%s %.0fs after the restore: relisted %v, staleness %.1fs (known %v), ahead of the head %v", r, since, relisted, stale, known, ahead == 1)
		// (the last proof before the restore came at most as etcd stopped,
		// seconds after it began)
		if !relisted && known && stale < since-15 {
			t.Errorf("%s: staleness %.1fs %.0fs after the restore, though its informer has not listed since: its store may hold the lost history", r, stale, since)
		}
	}
	if err := s.exporter.Restart(10 * time.Second); err != nil {
		t.Fatalf("restart the exporter: %v", err)
	}
	s.waitFresh(t, time.Now())
	s.assertRunning(t)
}

// relistsOf counts resource r's relists other than its initial one (every
// resource's when r is "").
func relistsOf(m testenv.Metrics, r string) float64 {
	var n float64
	for _, reason := range []string{catalog.RelistExpired, catalog.RelistError} {
		labels := map[string]string{catalog.LabelReason: reason}
		if r != "" {
			labels[catalog.LabelResource] = r
		}
		n += m.Sum(catalog.Relists.Name, labels)
	}
	return n
}

// dashboardPanels: every panel query of the chart's dashboards, with the
// dashboard's default variable selection and Grafana's interval variables,
// returns data from this Prometheus over the run.
func (s *stack) dashboardPanels(t *testing.T) {
	s.scenario(t)
	ds, err := loadDashboards()
	if err != nil {
		t.Fatal(err)
	}
	r := promv1.Range{Start: s.start, End: time.Now(), Step: 2 * time.Second}
	empty, checked := s.prom.emptyPanels(t, ds, r, nil)
	for _, q := range empty {
		t.Errorf("%s returns no data: %s", q.where, q.expr)
	}
	t.Logf("%d panel queries of %d dashboards checked over %v", checked, len(ds), r.End.Sub(r.Start).Round(time.Second))
}

// checkPage checks what a page must carry for the person it wakes.
func (s *stack) checkPage(t *testing.T, a notifiedAlert) {
	t.Helper()
	if got := a.Labels["severity"]; got != slo.DefaultSeverityPage {
		t.Errorf("severity %q, want %q: %s", got, slo.DefaultSeverityPage, a)
	}
	s.checkAlert(t, a)
}

// checkAlert checks the labels and annotations every alert carries.
func (s *stack) checkAlert(t *testing.T, a notifiedAlert) {
	t.Helper()
	name := a.Labels["alertname"]
	if a.Labels[catalog.LabelResource] == "" || a.Labels["severity"] == "" {
		t.Errorf("no resource or severity label: %s", a)
	}
	if a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
		t.Errorf("no summary or description: %s", a)
	}
	if want := s.spec.RunbookURLPrefix + strings.ToLower(name); a.Annotations["runbook_url"] != want {
		t.Errorf("runbook_url %q, want %q", a.Annotations["runbook_url"], want)
	}
	if strings.Contains(a.Annotations["description"], "{{") {
		t.Errorf("an unexpanded template in the description: %s", a)
	}
	if want := "/d/" + slo.DashboardResourceUID + "/?var-" + slo.DashboardVarResource + "=" + a.Labels[catalog.LabelResource] + "&"; !strings.HasPrefix(a.Annotations["dashboard_url"], want) {
		t.Errorf("dashboard_url %q, want it to start with %q", a.Annotations["dashboard_url"], want)
	}
}

// waitResolved waits for the resolved notification of a paged alert.
func (s *stack) waitResolved(t *testing.T, page notifiedAlert, since time.Time) {
	t.Helper()
	a := s.hook.wait(t, 4*time.Minute, "the resolved notification of "+page.Labels["alertname"], func(a notifiedAlert) bool {
		return a.Status == "resolved" && a.Received.After(since) && sameLabels(a.Labels, page.Labels)
	})
	t.Logf("resolved %v after the fault ended", a.Received.Sub(since).Round(time.Second))
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitFresh waits until every informer is synced and none is near the
// watch-stalled threshold (a quiet resource is fresh again at its next
// bookmark), the canary resource's cache is fresh, and a canary written
// after since was delivered. On a timeout it says which of these was not.
func (s *stack) waitFresh(t *testing.T, since time.Time) {
	t.Helper()
	testenv.WaitFor(t, 3*time.Minute, "every informer synced and fresh, canaries delivered", func() (bool, error) {
		m, err := testenv.Scrape(s.exporter.MetricsURL())
		if err != nil {
			return false, err
		}
		if r := s.unsynced(m); r != "" {
			return false, fmt.Errorf("%s not synced", r)
		}
		for _, r := range s.resources {
			stale, ok := m.Value(catalog.CacheStaleness.Name, res(r))
			if !ok || stale > s.spec.Symptoms.StalledAfterSeconds*3/4 {
				return false, fmt.Errorf("%s: staleness %v (known: %v), want at most %v", r, stale, ok, s.spec.Symptoms.StalledAfterSeconds*3/4)
			}
		}
		if stale, _ := m.Value(catalog.CacheStaleness.Name, res(canaryResource)); stale >= freshSeconds {
			return false, fmt.Errorf("%s: staleness %v, want under %v", canaryResource, stale, freshSeconds)
		}
		if delivered, _ := m.Value(catalog.CanaryLastDelivered.Name, res(canaryResource)); delivered <= float64(since.UnixNano())/1e9 {
			return false, fmt.Errorf("the last canary delivered at %v, none since %v", time.Unix(int64(delivered), 0).UTC().Format(time.TimeOnly), since.UTC().Format(time.TimeOnly))
		}
		return true, nil
	})
}
