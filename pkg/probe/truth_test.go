package probe

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// Each test here states what is true in a scripted world and fails when a
// signal reports something else. Issue numbers name the measured lies.

// idleWorld plays an idle resource in a busy cluster for dur seconds: a
// head probe every 5s, `rate` writes per second to other resources, the
// watch cache's RV advanced by etcd's progress notifications every
// `progress` seconds, and a bookmark carrying it every 60s until stallAt
// (then nothing arrives). each is called after every probe.
func idleWorld(t *testing.T, rate uint64, progress, stallAt, dur float64, each func(w *world, s float64)) {
	w := newWorld(t, 10_000)
	w.probe(0)
	w.sync(0.1)
	cacheRV, lastProgress := w.rv, 0.0
	for s := 5.0; s <= dur; s += 5 {
		w.others(rate * 5)
		w.probe(s)
		if s-lastProgress >= progress {
			cacheRV, lastProgress = w.rv, s
		}
		if math.Mod(s, 60) == 0 && s < stallAt {
			w.deliver(s+0.5, watch.Bookmark, cacheRV)
		}
		each(w, s)
	}
}

// #14: the RV lag of a healthy idle resource is 0 at 0, 100 and 1,000
// writes/s elsewhere, on 5s and 10m progress notification; a stalled watch
// shows the revisions it may be missing (above the SLO's 500) within two
// bookmark periods and a probe.
func TestRVLagOfAnIdleResourceIsZeroAtAnyWriteRate(t *testing.T) {
	for _, rate := range []uint64{0, 100, 1000} {
		for _, progress := range []float64{5, 600} {
			idleWorld(t, rate, progress, math.Inf(1), 1200, func(w *world, s float64) {
				if sn := w.snap(s + 1); sn.LagKnown && sn.Lag > 0 {
					t.Fatalf("%d writes/s elsewhere, progress every %vs: idle resource lag %d at %vs; true lag 0", rate, progress, sn.Lag, s+1)
				}
			})
		}
	}
	for _, rate := range []uint64{100, 1000} {
		var bad float64
		idleWorld(t, rate, 5, 600, 900, func(w *world, s float64) {
			if sn := w.snap(s + 1); s > 600 && bad == 0 && sn.LagKnown && sn.Lag > 500 {
				bad = s + 1
			}
		})
		if bad == 0 || bad > 600+2*60+probeEvery.Seconds()+1 {
			t.Errorf("%d writes/s: a watch stalled at 600s shows lag > 500 at %vs; want within two bookmark periods and a probe", rate, bad)
		}
	}
}

// An idle resource's list is not behind a head sampled while it was in
// flight: behind a load balancer the head probe and the informer's list
// reach different API servers, and a probe of another resource's writes
// may answer after the list began and before its answer arrives (CI's
// TestHABusyCluster: lag 1 for the minute until the first proof). The list
// held everything up to its RV when it began; nothing of this resource was
// written since, so the true lag is 0. A list from a watch cache behind a
// head known before it began is behind that head, where the informer's own
// reads move that cache; without them a quiet resource's cache trails the
// writes elsewhere as a stuck one does, and the lag is unknown.
func TestAListIsNotBehindAHeadSampledWhileItWasInFlight(t *testing.T) {
	w := newWorld(t, 10_000)
	w.probe(0)
	w.inner.onList = func() {
		w.others(3) // writes elsewhere, answered by the probe at 0.5s
		w.probe(0.5)
		w.at(0.8)
	}
	w.sync(0.2)
	w.inner.onList = nil
	for s := 1.0; s <= 55; s += 5 {
		w.probe(s)
		if sn := w.snap(s + 0.5); sn.LagKnown && sn.Lag > 0 {
			t.Fatalf("%vs: idle resource lag %d after a list that began at the head; true lag 0", s+0.5, sn.Lag)
		}
	}

	// control: a list from a watch cache (RV "0") answered 3 revisions
	// below a head known before it began, with and without reads of the
	// informer's own
	for _, own := range []bool{true, false} {
		w = newWorld(t, 10_000)
		if own {
			w.mon.freshenWith(w.is, func(context.Context) (string, error) { return strconv.FormatUint(w.rv, 10), nil }, true)
		}
		w.probe(0)
		w.at(0.2)
		w.inner.pages = []runtime.Object{page(strconv.FormatUint(w.rv-3, 10), "")}
		if _, err := w.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			t.Fatal(err)
		}
		w.openWatch()
		sn := w.snap(1)
		switch {
		case own && (!sn.LagKnown || sn.Lag != 3):
			t.Errorf("a list 3 revisions below the head known before it began: lag %d (known %v), want 3", sn.Lag, sn.LagKnown)
		case !own && sn.LagKnown:
			t.Errorf("without reads of its own, a list 3 revisions below the head: lag %d known, want unknown (a quiet cache)", sn.Lag)
		}
	}
}

// sliStaleness is what the staleness SLI judges of a snapshot: staleness
// above the resource's freshness proof period (the height of its healthy
// sawtooth), unknown until that period is.
func sliStaleness(sn snapshot) (float64, bool) {
	return sn.StalenessSeconds - sn.ProofPeriodSeconds, sn.StalenessKnown && sn.ProofPeriodKnown
}

// #14: a healthy idle resource never has a bad staleness slice (the
// minimum over 2 minutes of what the SLI judges, above 30s), also on etcd's
// default 10-minute progress-notify interval; a stalled one does within a
// bounded time.
func TestStalenessSLIOfAnIdleResourceOnAnyProgressInterval(t *testing.T) {
	for _, progress := range []float64{5, 600} {
		var window []float64
		idleWorld(t, 100, progress, math.Inf(1), 2400, func(w *world, s float64) {
			v, ok := sliStaleness(w.snap(s + 1))
			if !ok {
				window = nil
				return
			}
			window = append(window, v)
			if len(window) > 24 { // 2 minutes of 5s scrapes
				window = window[1:]
			}
			if s > 900 && len(window) == 24 && minOf(window) > 30 {
				t.Fatalf("progress every %vs: a bad staleness slice at %vs (min over 2m %vs) for a healthy idle resource", progress, s+1, minOf(window))
			}
		})
	}
	// stalled at 1500s: bad slices begin within the proof period, the
	// threshold and the slice window (the proof period is the healthy
	// sawtooth's height: ~65s on 5s progress, ~660s on 10-minute progress)
	for _, c := range []struct{ progress, bound float64 }{{5, 1500 + 65 + 30 + 120 + 10}, {600, 1500 + 660 + 30 + 120 + 10}} {
		var window []float64
		bad := 0.0
		idleWorld(t, 100, c.progress, 1500, 3000, func(w *world, s float64) {
			v, ok := sliStaleness(w.snap(s + 1))
			if !ok {
				return
			}
			window = append(window, v)
			if len(window) > 24 {
				window = window[1:]
			}
			if s > 1500 && bad == 0 && len(window) == 24 && minOf(window) > 30 {
				bad = s + 1
			}
		})
		t.Logf("progress every %vs: stalled at 1500s, first bad staleness slice at %vs", c.progress, bad)
		if bad == 0 || bad > c.bound {
			t.Errorf("progress every %vs: a watch stalled at 1500s has its first bad staleness slice at %vs; want by %vs", c.progress, bad, c.bound)
		}
	}
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// #15.3: a failing head probe is not a stalled watch: while events keep
// arriving, lag and staleness are unknown, not frozen or growing.
func TestFailingHeadProbeIsUnknownNotStalled(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1)
	w.probeErr = apierrors.NewTooManyRequests("APF", 1)
	for s := 5.0; s <= 600; s += 5 {
		w.probe(s)
		w.deliver(s+0.1, watch.Modified, w.write())
	}
	if sn := w.snap(601); sn.StalenessKnown || sn.LagKnown {
		t.Errorf("after 600s of failed probes and an event every 5s: staleness %vs (known %v), lag %d (known %v); want both unknown",
			sn.StalenessSeconds, sn.StalenessKnown, sn.Lag, sn.LagKnown)
	}
}

// #15.4: a head sample bounds commits by its response, not its request: a
// write committed while a slow probe waited, delivered 0.15s after it
// committed, is not 2s late.
func TestDeliveryLagIsALowerBoundWithSlowProbes(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1)
	var r uint64
	w.probeTook = 2 * time.Second
	w.probeSaw = func() uint64 { r = w.write(); return w.rv } // committed at 11.9s, seen by the probe sent at 10s
	w.probe(10)                                               // answers at 12s
	w.deliver(12.05, watch.Modified, r)
	if n, sum := histogram(t, w.tr.deliveryLag.(prometheus.Histogram)); n != 1 || sum > 0.15 {
		t.Errorf("delivery lag %d observations summing to %vs; want 1 of at most 0.15s (commit ≤ 12s, delivered 12.05s)", n, sum)
	}
}

// #15.5: events held through a probe outage do not count as delivered at
// once: their delay cannot be bounded, and the signal says so.
func TestEventsHeldThroughAProbeOutageAreNotZero(t *testing.T) {
	w, rvs := heldThroughProbeOutage(t)
	for i, rv := range rvs {
		w.deliver(300+float64(i)*0.001, watch.Modified, rv) // each held 200-299s
	}
	h := w.tr.deliveryLag.(prometheus.Histogram)
	if n, sum := histogram(t, h); n > 0 && sum/float64(n) < 200 {
		t.Errorf("%d held events recorded with mean delivery lag %vs; they were held 200-299s", n, sum/float64(n))
	}
	if got := testutil.ToFloat64(w.mon.metrics.DeliveryUnbounded.WithLabelValues(w.tr.name)); got != 100 {
		t.Errorf("unbounded deliveries %v; want 100", got)
	}
}

// heldThroughProbeOutage is a synced world whose head probe fails from 1s
// to 295s while 100 writes commit, one a second, and are held: their RVs,
// not yet delivered.
func heldThroughProbeOutage(t *testing.T) (*world, []uint64) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1)
	w.probeErr = errors.New("connection refused")
	var rvs []uint64
	for s := 1.0; s <= 100; s++ {
		w.at(s)
		rvs = append(rvs, w.write())
	}
	for s := 5.0; s <= 295; s += 5 {
		w.probe(s)
	}
	return w, rvs
}

// #15.6: relists are counted, not list attempts.
func TestRelistsCountedOnceNotPerAttempt(t *testing.T) {
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	gone := apierrors.NewResourceExpired("too old resource version")
	for _, c := range []struct {
		name   string
		run    func(r *lwRig)
		reason string
	}{{
		name: "a relist throttled twice by 429",
		run: func(r *lwRig) {
			_ = r.watch(false, watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(errors.New("reset")).ErrStatus})
			r.inner.listErr = throttled
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
			r.inner.listErr = nil
			r.inner.pages = []runtime.Object{page("30", "")}
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
		},
		reason: catalog.RelistError,
	}, {
		name: "a 410 on the relist's List, retried at RV \"\"",
		run: func(r *lwRig) {
			_ = r.watch(false, watch.Event{Type: watch.Error, Object: &gone.ErrStatus})
			r.inner.listErr = gone
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
			r.inner.listErr = nil
			r.inner.pages = []runtime.Object{page("30", "")}
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{})
		},
		reason: catalog.RelistExpired,
	}, {
		name: "a watch-list that falls back to List",
		run: func(r *lwRig) {
			_ = r.watch(false, watch.Event{Type: watch.Error, Object: &gone.ErrStatus})
			r.inner.watchErr = apierrors.NewBadRequest("watch-list not supported")
			_ = r.watch(true)
			r.inner.watchErr = nil
			r.inner.pages = []runtime.Object{page("30", "")}
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		},
		reason: catalog.RelistExpired,
	}} {
		t.Run(c.name, func(t *testing.T) {
			r := syncedLWRig(t)
			c.run(r)
			for _, reason := range []string{catalog.RelistExpired, catalog.RelistError} {
				want := 0.0
				if reason == c.reason {
					want = 1
				}
				if got := testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", reason)); got != want {
					t.Errorf("relists{%s} = %v; want %v", reason, got, want)
				}
			}
		})
	}
}

// syncedLWRig is an lwRig whose informer listed once and synced.
func syncedLWRig(t *testing.T) *lwRig {
	r := newLWRig(t)
	r.inner.pages = []runtime.Object{page("10", "")}
	if _, err := r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	r.is.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
	return r
}

// #15.7: a 410 during the initial sync (an expired continue token) does not
// label a later relist, for another cause, "expired".
func TestStaleExpiredFlagDoesNotLabelALaterRelist(t *testing.T) {
	r := newLWRig(t)
	r.inner.listErr = apierrors.NewResourceExpired("continue token expired")
	_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	r.inner.listErr = nil
	r.inner.pages = []runtime.Object{page("10", "")}
	_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	r.is.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
	_ = r.watch(false, watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(errors.New("reset")).ErrStatus})
	r.inner.pages = []runtime.Object{page("20", "")}
	_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
	if got := testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", catalog.RelistExpired)); got != 0 {
		t.Errorf("relists{expired} = %v after a relist caused by a connection reset", got)
	}
}

// #15.8: List latency is observed per page, as the help text says: three
// 1s pages are three 1s observations, and a failed third page reports its
// own second.
func TestListLatencyPerPage(t *testing.T) {
	r := newLWRig(t)
	r.inner.pages = []runtime.Object{page("10", "a"), page("10", "b"), page("10", "")}
	for _, cont := range []string{"", "a", "b"} {
		r.inner.onList = func() { r.clock.Step(time.Second) }
		_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 500, Continue: cont})
	}
	n, sum := histogram(t, r.mon.metrics.ListDuration.WithLabelValues("configmaps", catalog.KindList, catalog.ResultSuccess).(prometheus.Histogram))
	if n != 3 || sum != 3 {
		t.Errorf("three 1s pages: %d observations summing to %vs; want 3 of 1s", n, sum)
	}
	r.inner.pages = []runtime.Object{page("20", "a")}
	r.inner.lists = 0
	_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 500})
	r.inner.listErr = apierrors.NewResourceExpired("continue token expired")
	_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 500, Continue: "a"})
	if n, sum := histogram(t, r.mon.metrics.ListDuration.WithLabelValues("configmaps", catalog.KindList, catalog.ResultError).(prometheus.Histogram)); n != 1 || sum != 1 {
		t.Errorf("a failed second page: %d error observations summing to %vs; want 1 of its own 1s", n, sum)
	}
}

// #15.9: the error series exist at 0 from the start, so increase() counts
// the first error and dashboards show 0 rather than no data.
func TestErrorSeriesExistAtZero(t *testing.T) {
	mon := New(Options{})
	reg := prometheus.NewPedanticRegistry()
	if err := mon.Register(reg); err != nil {
		t.Fatal(err)
	}
	mon.track(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "")
	for _, fam := range []catalog.Metric{catalog.ListErrors, catalog.WatchErrors, catalog.HeadProbeErrors} {
		n, err := testutil.GatherAndCount(reg, fam.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n < len(errorReasons) {
			t.Errorf("%s: %d series for a new resource; want one at 0 per known reason (%d)", fam.Name, n, len(errorReasons))
		}
	}
}

// convergenceWorld runs a convergence informer over a fake dynamic client
// of one resource (cluster-scoped when ns is "").
type convergenceWorld struct {
	t      *testing.T
	client *dynamicfake.FakeDynamicClient
	gvr    schema.GroupVersionResource
	tr     *resource
	mon    *Monitor
	inf    cache.SharedIndexInformer
	stop   context.CancelFunc
}

func newConvergenceWorld(t *testing.T) *convergenceWorld {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"})
	mon := New(Options{})
	tr := mon.track(gvr, "")
	inf, _ := mon.convergenceInformer(client, gvr, tr, "status.observedGeneration", nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return &convergenceWorld{t: t, client: client, gvr: gvr, tr: tr, mon: mon, inf: inf, stop: cancel}
}

func widget(ns, name, uid string, gen int64, observed *int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetGeneration(gen)
	if observed != nil {
		_ = unstructured.SetNestedField(u.Object, *observed, "status", "observedGeneration")
	}
	return u
}

func (c *convergenceWorld) create(u *unstructured.Unstructured) {
	c.t.Helper()
	if _, err := c.client.Resource(c.gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *convergenceWorld) unconverged(want int, what string) {
	c.t.Helper()
	waitUntil(c.t, what, func() bool {
		s := c.tr.converge.Load().snapshot(time.Now())
		return s.Unconverged == want
	})
}

// waitUntil polls cond for up to a minute (the fake informer delivers in milliseconds).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// #15.10: a deleted unconverged cluster-scoped object leaves the counts.
func TestConvergenceClusterScopedDelete(t *testing.T) {
	c := newConvergenceWorld(t)
	c.create(widget("", "a", "uid-a", 2, new(int64(1))))
	c.unconverged(1, "the unconverged object counted")
	if err := c.client.Resource(c.gvr).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.unconverged(0, "the deleted object leaves the counts")
}

// #15.11: an object recreated with a lower generation is a new object, and
// objects that never report an observed generation are not unconverged.
func TestConvergenceRecreatedAndUnobservable(t *testing.T) {
	c := newConvergenceWorld(t)
	c.create(widget("ns", "a", "uid-1", 7, new(int64(6)))) // generation 7 pending
	c.unconverged(1, "generation 7 pending")
	// deleted and recreated while the watch was down: the relist replaces
	// the old object with the new one under the same key, as an update
	old := c.inf.GetStore().List()[0]
	recreated := generationTransformed(t, widget("ns", "a", "uid-2", 1, new(int64(1))))
	c.tr.converge.Load().handlers(clock.RealClock{}).OnUpdate(old, recreated)
	c.unconverged(0, "the recreated object converged; generation 7 belonged to the deleted one")
	// A new object of a resource whose controller reports observed
	// generations has none until its controller acts: it is waiting.
	c.create(widget("ns", "new", "uid-3", 1, nil))
	c.unconverged(1, "a new object its controller has not acted on")

	// A resource none of whose objects reports an observed generation says
	// nothing about convergence: its objects are counted apart, never
	// unconverged forever; once one reports, the others were waiting all
	// along (since they were first seen).
	q := newConvergenceWorld(t)
	q.create(widget("ns", "plain", "uid-4", 3, nil))
	q.create(widget("ns", "plain2", "uid-5", 1, nil))
	// wait on the tracker, not the store: the informer hands an object to
	// its handlers after its store has it (a -race gate on a loaded machine
	// once saw the store hold both and the tracker one)
	waitUntil(t, "the objects without observedGeneration counted", func() bool {
		return q.tr.converge.Load().snapshot(time.Now()).Unobservable == 2
	})
	if s := q.tr.converge.Load().snapshot(time.Now()); s.Unconverged != 0 || s.Unobservable != 2 {
		t.Errorf("objects of a resource that reports no observed generation: %+v; want 2 unobservable, 0 unconverged", s)
	}
	q.create(widget("ns", "reports", "uid-6", 2, new(int64(2))))
	q.unconverged(2, "once the resource reports observed generations, the two without were waiting")
	if s := q.tr.converge.Load().snapshot(time.Now()); s.Unobservable != 0 {
		t.Errorf("%d unobservable once the resource reports observed generations; want 0", s.Unobservable)
	}
}

func generationTransformed(t *testing.T, u *unstructured.Unstructured) *generationObject {
	t.Helper()
	g, err := generationTransform("status.observedGeneration")(u)
	if err != nil {
		t.Fatal(err)
	}
	return g.(*generationObject)
}

// #15.12: with several informers for one resource, the resource's truth is
// the worst informer: one stalled informer is not hidden by another that
// streams, and objects are not counted twice.
func TestSeveralInformersOfOneResource(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1)
	second := &scriptedLW{pages: []runtime.Object{page("100", "")}, watcher: watch.NewFake()}
	lw2 := w.mon.instrument(w.tr, second)
	lw2.state.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
	if _, err := lw2.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lw2.WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	} // the second informer's watch stalls: nothing arrives on it
	for s := 5.0; s <= 300; s += 5 {
		r := w.write()
		w.probe(s)
		w.deliver(s+0.1, watch.Modified, r) // the first informer streams
	}
	sn := w.snap(301)
	if sn.StalenessKnown && sn.StalenessSeconds < 250 {
		t.Errorf("one of two informers stalled for 300s: resource staleness %vs; want the stalled informer's (~300s)", sn.StalenessSeconds)
	}
}

// #15.13: a resource on another etcd left in the default space is never
// used as the space's head source: its revisions are not a regression of
// the other resources' head.
func TestResourceOnAnotherEtcdIsNotAHeadSource(t *testing.T) {
	w := newWorld(t, 5000)
	w.otherEtcd("events", 300)
	w.probe(0)
	w.sync(0.1)
	w.probeErr = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("rbac"))
	w.probe(5) // configmaps refused: the space falls back to events
	w.probeErr = nil
	for s := 10.0; s <= 60; s += 5 {
		w.others(50)
		w.probe(s)
	}
	if got := testutil.ToFloat64(w.tr.regressions); got != 0 {
		t.Errorf("configmaps counted %v RV regressions because events' etcd answered the head probe", got)
	}
}

// #39, premise 2: a resource of another etcd (events on one of its own, its
// space not configured) that no freshness read samples (a busy resource,
// or reads off) is read by the head probe until the reference settles it:
// contradicted twice while the main etcd moves on, it gets a space of its
// own, and a restore of the main etcd is no regression of it (simulation
// seed 64 of -sim.widen=order).
func TestAResourceOfAnotherEtcdThatNothingReadsGetsASpaceOfItsOwn(t *testing.T) {
	w := newWorld(t, 5000)
	events := w.otherEtcd("events", 300)
	w.probe(0)
	w.sync(0.1)
	for s := 5.0; s <= 60; s += 5 {
		w.others(50)
		w.probe(s)
	}
	if events.space.Load() == w.tr.space.Load() {
		t.Fatalf("events, read below configmaps' head while it moved on, still shares its space after a minute of probes")
	}
	w.rv -= 1000 // the main etcd restored from a backup
	for s := 65.0; s <= 120; s += 5 {
		w.others(1)
		w.probe(s)
	}
	if got := testutil.ToFloat64(w.tr.regressions); got != 1 {
		t.Errorf("configmaps counted %v RV regressions of the main etcd's restore; want 1", got)
	}
	if got := testutil.ToFloat64(events.regressions); got != 0 {
		t.Errorf("events counted %v RV regressions; its etcd never went back", got)
	}
}

// Resources of one other etcd, each found foreign to the cluster's space,
// share the space the first moved to: a restore of their etcd is theirs
// alike, not one's only (simulation seed 1313866: widgets and the canary's
// configmaps, each in a space of its own, the canary's write proved a
// restore in one while the other read fresh). A resource of a third etcd
// that joined them moves on once its reads contradict their reference.
func TestResourcesOfAnotherEtcdShareTheSpaceTheyMoveTo(t *testing.T) {
	w := newWorld(t, 5000)
	var other atomic.Uint64 // events and leases: one etcd of their own
	other.Store(300)
	events, leases := w.onEtcd("events", &other), w.onEtcd("leases", &other)
	third := w.otherEtcd("secrets", 90_000)
	w.probe(0)
	w.sync(0.1)
	for s := 5.0; s <= 300; s += 5 {
		w.others(50)
		w.probeAll(s)
	}
	cluster := w.tr.space.Load()
	if events.space.Load() == cluster || leases.space.Load() == cluster {
		t.Fatalf("events or leases still in the cluster's space after 5 minutes of probes")
	}
	if events.space.Load() != leases.space.Load() {
		t.Errorf("events in space %q, leases in %q: one etcd, two spaces", events.space.Load().name, leases.space.Load().name)
	}
	if sp := third.space.Load(); sp == cluster || sp == events.space.Load() {
		t.Errorf("secrets, of a third etcd, in space %q with cluster %q and events' %q", sp.name, cluster.name, events.space.Load().name)
	}
	other.Store(other.Load() - 200) // events' and leases' etcd restored from a backup
	for s := 305.0; s <= 360; s += 5 {
		w.others(50)
		w.probeAll(s)
	}
	for _, r := range []*resource{events, leases} {
		if got := testutil.ToFloat64(r.regressions); got != 1 {
			t.Errorf("%s counted %v RV regressions of its etcd's restore; want 1", r.name, got)
		}
	}
	if got := testutil.ToFloat64(w.tr.regressions) + testutil.ToFloat64(third.regressions); got != 0 {
		t.Errorf("configmaps and secrets counted %v RV regressions; their etcds never went back", got)
	}
}

// A resource read below an idle reference and contradicted once, that
// neither side moved on from since (two idle etcds), is doubted: a restore
// of the reference's etcd is no regression of it (simulation seed
// 1408259: events on an etcd of its own at revision 10, idle, beside idle
// configmaps at 1,000; the main etcd restored 100 back, and events counted
// the regression).
func TestARestoreIsNoRegressionOfADoubtedResource(t *testing.T) {
	w := newWorld(t, 1000)
	events := w.mon.track(schema.GroupVersionResource{Version: "v1", Resource: "events"}, "")
	events.space.Load().addSource(events.name, func(context.Context) (string, error) { return "10", nil })
	w.probe(0)
	w.sync(0.1)
	for s := 5.0; s <= 120; s += 5 { // nothing written anywhere
		w.probeAll(s)
	}
	if events.space.Load() != w.tr.space.Load() {
		t.Fatal("setup: events found foreign in a still world, where nothing moves")
	}
	w.rv -= 100 // the main etcd restored from a backup
	for s := 125.0; s <= 200; s += 5 {
		w.probeAll(s)
	}
	if got := testutil.ToFloat64(w.tr.regressions); got != 1 {
		t.Errorf("configmaps counted %v RV regressions of its etcd's restore; want 1", got)
	}
	if got := testutil.ToFloat64(events.regressions); got != 0 {
		t.Errorf("events counted %v RV regressions; its etcd never went back", got)
	}
}

// A resource one of its informers found not served (its List answered
// 404: a CRD deleted) has nothing to watch: another informer's silence,
// still counting from before, is no stall of it (simulation seed 331365 of
// -sim.widen=order,http1,informers,nostart,scopes).
func TestAResourceNotServedHasNoWatchSilence(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1) // the first informer lists, then hears nothing
	gone := &scriptedLW{listErr: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")}
	lw2 := w.mon.instrument(w.tr, gone)
	lw2.state.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
	for s := 5.0; s <= 300; s += 5 {
		w.probe(s)
	}
	w.at(300)
	if _, err := lw2.ListWithContext(context.Background(), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the second informer's List: %v, want not found", err)
	}
	sn := w.snap(301)
	if sn.State != catalog.StateUnserved {
		t.Fatalf("state %q, want %q", sn.State, catalog.StateUnserved)
	}
	if sn.SilenceKnown {
		t.Errorf("watch silence %vs for a resource that is not served; want absent", sn.SilenceSeconds)
	}
}

// A resource whose reads all say it is not served (a CRD deleted) has
// nothing to watch, even while its informer's watch, opened before, never
// learnt it: a watch on a connection that stopped carrying bytes loses the
// server's end of the stream (simulation seeds 1305071 and 1318303: a
// "stall" of a deleted CRD's watch for minutes, every read answering 404).
// The watch's next sign of life, or a read that answers, says it is served.
func TestAResourceItsReadsFindNotServedHasNoWatchSilence(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.1)
	w.deliver(30, watch.Bookmark, w.rv)
	w.probeErr = apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	for s := 35.0; s <= 400; s += 5 {
		w.probe(s)
	}
	sn := w.snap(400)
	if sn.State != catalog.StateUnserved {
		t.Fatalf("state %q after 6 minutes of 404s, want %q", sn.State, catalog.StateUnserved)
	}
	if sn.SilenceKnown {
		t.Errorf("watch silence %vs for a resource its reads find not served; want absent", sn.SilenceSeconds)
	}
	// the watch speaks: the server it is on serves the resource
	w.deliver(401, watch.Bookmark, w.rv)
	if sn := w.snap(402); sn.State == catalog.StateUnserved {
		t.Errorf("unserved after the watch had a bookmark")
	}
	w.probe(405) // a 404 again, after the bookmark
	if sn := w.snap(406); sn.State != catalog.StateUnserved {
		t.Errorf("state %q after a 404 read with the watch silent since, want %q", sn.State, catalog.StateUnserved)
	}
	w.probeErr = nil
	w.probe(410)
	if sn := w.snap(411); sn.State == catalog.StateUnserved {
		t.Errorf("unserved after a read answered")
	}
}

// #15.1: after an etcd restore, new canary writes (lower RVs) are not
// "delivered" by the memory of the lost history.
func TestCanaryAfterRestore(t *testing.T) {
	c, h, _ := newCanaryState()
	in := &informer{}
	c.wrote(2000, sec(0))
	c.delivered(in, 2000, 0, sec(0.1))
	// etcd restored from an hour-old backup: writes now return lower RVs
	if lost := c.wrote(1500, sec(10)); !lost {
		t.Errorf("a write after the restore: history lost %v; want true", lost)
	}
	if n, _ := histogram(t, h); n != 1 {
		t.Errorf("%d deliveries; want only the one before the restore", n)
	}
	if _, ok := c.delivered(in, 1500, 0, sec(12)); !ok {
		t.Error("the delivery of the post-restore write was not matched")
	}
}

// #15.2: after an etcd restore that kube-apiserver's watch cache did not
// notice, bookmarks carrying the lost, higher history do not make the cache
// look fresh.
func TestOldHistoryDoesNotReseedFreshness(t *testing.T) {
	w := newWorld(t, 2000)
	w.probe(0)
	w.sync(0.1)
	w.probe(5)
	w.rv = 1500 // restored from a backup; the API server keeps its watch cache at 2000
	for s := 10.0; s <= 310; s += 5 {
		w.others(1)
		w.probe(s)
		if math.Mod(s, 60) == 0 {
			w.deliver(s+0.5, watch.Bookmark, 2000+uint64(s)) // the stale watch cache's progress
		}
	}
	if sn := w.snap(311); sn.StalenessKnown && sn.StalenessSeconds < 290 {
		t.Errorf("staleness %vs after 300s on a lost history; want ≥ 290s or unknown", sn.StalenessSeconds)
	}
}

// #15.5, the other order: when the probe recovers before the held events
// arrive, the first sample after the outage bounds their commit only to
// "somewhere in the outage": still unknown, not a delay of ~0.
func TestEventsHeldThroughAProbeOutageWhenTheProbeRecoversFirst(t *testing.T) {
	w, rvs := heldThroughProbeOutage(t)
	w.probeErr = nil
	w.probe(300)
	for i, rv := range rvs {
		w.deliver(300.5+float64(i)*0.001, watch.Modified, rv)
	}
	if n, _ := histogram(t, w.tr.deliveryLag.(prometheus.Histogram)); n != 0 {
		t.Errorf("%d held events recorded with a delay bounded only by the first probe after the outage", n)
	}
	if got := testutil.ToFloat64(w.mon.metrics.DeliveryUnbounded.WithLabelValues(w.tr.name)); got != 100 {
		t.Errorf("unbounded deliveries %v; want 100", got)
	}
}

// #15.2, as a real kube-apiserver behaves when etcd is restored under it:
// its watch cache keeps the lost history, so consistent reads (the head
// probe) and bookmarks stay at the old, higher RV, while writes land in the
// restored history at lower RVs. The writes are the authoritative head: the
// informer's RV is ahead of it, and nothing of the lost history proves the
// cache fresh.
func TestStaleWatchCacheAfterARestoreIsCaughtByWrites(t *testing.T) {
	w := newWorld(t, 2000)
	w.probe(0)
	w.sync(0.1)
	w.probe(5)                                 // fresh as of 5s
	w.probeSaw = func() uint64 { return 2000 } // the watch cache's head, frozen in the lost history
	w.rv = 1500                                // etcd restored
	sp := w.tr.space.Load()
	for s := 10.0; s <= 300; s += 5 {
		w.probe(s)
		if math.Mod(s, 60) == 0 {
			w.deliver(s+0.5, watch.Bookmark, 2000) // bookmarks from the stale watch cache
		}
		w.at(s + 1)
		sp.mu.Lock()
		if sp.core.Write(w.write(), sec(s+1), false) { // the canary's write lands in the restored history
			sp.mu.Unlock()
			w.mon.regressed(sp, w.clock.Now(), w.rv)
		} else {
			sp.mu.Unlock()
		}
	}
	sn := w.snap(301)
	if sn.State != catalog.StateAheadOfHead {
		t.Errorf("state %q; want %q", sn.State, catalog.StateAheadOfHead)
	}
	if !sn.StalenessKnown || sn.StalenessSeconds < 290 {
		t.Errorf("staleness %vs (known %v) after 300s on a lost history; want at least 290s", sn.StalenessSeconds, sn.StalenessKnown)
	}
}

// #14: the bookmark cadence is what a watch's silence is judged by, and two
// bookmarks are not that cadence: the API server sends early ones right
// after a watch-list's initial events (every second until the watcher has
// seen the RV it asked for) and one 2s before the watch's timeout. Counted
// as periods, they made a 5s "cadence", so a healthy idle resource's
// informer looked silent 10s after its last bookmark and its lag jumped to
// head − RV: ~4,300 revisions 15s after a fresh start at 200 writes/s on a
// real API server.
func TestEarlyAndPreTimeoutBookmarksAreNotTheCadence(t *testing.T) {
	w := newWorld(t, 10_000)
	w.watchTimeout = 317 * time.Second
	w.probe(0)
	w.sync(0.1)
	cacheRV := w.rv
	w.deliver(1.5, watch.Bookmark, cacheRV) // early, after the initial events
	w.deliver(2.5, watch.Bookmark, cacheRV)
	watchStart := 0.1
	for s := 5.0; s <= 900; s += 5 {
		w.others(1000)
		w.probe(s)
		cacheRV = w.rv // progress notifications every 5s
		since := s - watchStart
		switch {
		case since >= 315 && since < 320:
			w.deliver(watchStart+315, watch.Bookmark, cacheRV) // 2s before the timeout
			w.endWatch(watchStart + 317)
			watchStart = watchStart + 317.5
			w.at(watchStart)
			w.openWatch()
		case math.Mod(s, 60) == 0:
			w.deliver(s+0.5, watch.Bookmark, cacheRV)
		}
		if sn := w.snap(s + 1); sn.LagKnown && sn.Lag > 0 {
			t.Fatalf("%vs: idle resource lag %d (watch silent %.0fs, bookmark period %.0fs); true lag 0", s+1, sn.Lag, sn.SilenceSeconds, sn.BookmarkPeriodSeconds)
		}
	}
	if sn := w.snap(901); math.Abs(sn.BookmarkPeriodSeconds-60) > 1 {
		t.Errorf("measured bookmark period %vs; the API server's cadence is 60s", sn.BookmarkPeriodSeconds)
	}
}

// #14: a quiet resource's freshness read makes the API server's next
// bookmark prove freshness, so it must precede every bookmark that can
// prove it, the one kube-apiserver sends 2s before a watch's timeout too.
// Timed from the last bookmark alone, a read due just after the
// pre-timeout bookmark never ran: the watch ended, the new watch's first
// bookmark came a minute later, and staleness reached two bookmark periods
// (115s in the busy cluster on etcd's 10-minute progress interval).
func TestFreshnessReadPrecedesThePreTimeoutBookmark(t *testing.T) {
	w := newWorld(t, 10_000)
	// The timeout puts the pre-timeout bookmark 50s after a regular one,
	// just before a read timed from that one would run.
	w.watchTimeout = 352 * time.Second
	cacheRV := w.rv // the watch cache's RV: it moves only when a read asks etcd for progress
	w.is.setHook(func(h *informerHooks) {
		h.freshen = func(context.Context) (string, error) {
			cacheRV = w.rv
			return strconv.FormatUint(w.rv, 10), nil
		}
	})
	w.probe(0)
	w.sync(0)
	opened, next := 0.0, 60.0 // the watch's start and its next regular bookmark
	var worst float64
	var worstAt int
	for s := 1; s <= 900; s++ {
		if w.idleSecond(s, opened, &next, &cacheRV) {
			w.endWatch(float64(s))
			w.at(float64(s))
			w.openWatch()
			opened, next = float64(s), float64(s)+60
		}
		if sn := w.snap(float64(s) + 0.5); sn.StalenessKnown && sn.StalenessSeconds > worst {
			worst, worstAt = sn.StalenessSeconds, s
		}
	}
	// A bookmark a minute, each proving a read sent proof.FreshenLead before it.
	if bound := 60 + proof.FreshenLead.Seconds() + 5; worst > bound {
		t.Errorf("idle resource's staleness reached %.1fs at %ds; a read before every bookmark keeps it under %.0fs", worst, worstAt, bound)
	}
}

// The API server counts a watch's timeout from when it started the watch,
// and sends its pre-timeout bookmark 2s before that: a watch request that
// a frozen connection held 2 minutes before the server saw it ends, and
// has its last bookmark, 2 minutes after one timed from the request. A
// freshness read before the bookmark so expected went unmet: the lag of
// an idle resource read 1,000s of revisions while its store missed
// nothing (simulation seed 1005679: RV lag 3,279 for 30 s).
func TestAWatchHeldOnTheWayCountsItsTimeoutFromItsStart(t *testing.T) {
	w := newWorld(t, 10_000)
	w.watchTimeout = 374 * time.Second
	cacheRV := w.rv
	w.is.setHook(func(h *informerHooks) {
		h.freshen, h.ownReads = func(context.Context) (string, error) {
			cacheRV = w.rv
			return strconv.FormatUint(w.rv, 10), nil
		}, true
	})
	w.probe(0)
	held := 120 * time.Second
	w.inner.onWatch = func() { w.clock.Step(held) } // the request waits on a frozen connection
	w.sync(0)
	w.inner.onWatch = nil
	opened := held.Seconds() // the server started the watch as the request reached it
	next := opened + 60
	var worst uint64
	var worstAt int
	for s := int(opened) + 1; s <= int(opened+w.watchTimeout.Seconds())-1; s++ {
		w.idleSecond(s, opened, &next, &cacheRV)
		if sn := w.snap(float64(s) + 0.5); sn.LagKnown && sn.Lag > worst {
			worst, worstAt = sn.Lag, s
		}
	}
	if worst > 0 {
		t.Errorf("an idle resource whose every bookmark came on the server's schedule read RV lag %d at %ds; want 0", worst, worstAt)
	}
}

// A freshness read is what lets a bookmark show a stuck watch cache: the
// cache's bookmark then carries an RV below the read's head. The read was
// skipped while the store had been proven fresh within two leads ("events
// keep it fresh"), so a cache that stopped 10s before a bookmark got no
// read before it, and the lag it left showed only a bookmark period later
// (simulation seed 637768 of 40,000: RV lag 0 with 379 changes missing
// for 76s).
func TestTheBookmarkAfterEventsStopIsRead(t *testing.T) {
	w := newWorld(t, 10_000)
	cacheRV := w.rv // stuck from 50s on
	w.is.setHook(func(h *informerHooks) {
		h.freshen, h.ownReads = func(context.Context) (string, error) {
			return strconv.FormatUint(w.rv, 10), nil
		}, true
	})
	w.probe(0)
	w.sync(0)
	for s := 1; s <= 61; s++ {
		w.others(10)
		if s <= 50 { // an event a second, then the cache stops
			cacheRV = w.write()
			w.deliver(float64(s), watch.Modified, cacheRV)
		}
		if s%5 == 0 {
			w.probe(float64(s))
		}
		w.freshen(float64(s))
		if s == 60 {
			w.deliver(60, watch.Bookmark, cacheRV) // the stuck cache's bookmark, at its old RV
		}
	}
	if sn := w.snap(61); !sn.LagKnown || sn.Lag == 0 {
		t.Errorf("the first bookmark after the cache stopped carried its old RV: lag %d (known %v), want the head's distance", sn.Lag, sn.LagKnown)
	}
}

// A quiet resource's freshness read is its head: while the reads fail (its
// connection hangs new requests; the watch stream already open flows on)
// its bookmarks carry the watch cache's old RV and prove nothing new. Its
// staleness grew as if it were stale: 600s for a store missing nothing,
// and the staleness burn paged (simulation page seed 327: informers'
// connection hung 15 min, three API servers, etcd's progress every 10 min).
// Like a head probe that fails, a read that fails leaves staleness
// unknown (head_unknown), not growing; a watch that stops delivering
// still shows by its silence.
func TestAQuietStoreWhoseReadsFailIsOfUnknownStaleness(t *testing.T) {
	w := newWorld(t, 10_000)
	readsFail(w, readsFailing{from: 300, until: 1200, recovered: 1300, end: 1500}, func(s int, cacheRV uint64) {
		if s%60 == 0 {
			w.deliver(float64(s), watch.Bookmark, cacheRV)
		}
	})
}

// A quiet store whose freshness reads fail is of unknown staleness, unless
// it provably lacks a change: the canary's write answered through another
// API server a minute ago and more, which its watch, on the server cut off
// etcd, never delivers. It is stale whatever its reads say, and its last
// proof bounds that from above (simulation page seed 3600078: three API
// servers, the exporter's informers on one cut off etcd 15 min, configmaps
// stale 14.5 min with a canary writing through another, no page).
func TestAQuietStoreBehindTheCanaryIsStaleWhileItsReadsFail(t *testing.T) {
	w, c := canaryWorld(t)
	failing, cacheRV := failableReads(w)
	w.at(0.1)
	list := page(strconv.FormatUint(w.rv, 10), "")
	list.Items = []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, ResourceVersion: "999"}}}
	w.inner.pages = []runtime.Object{list}
	if _, err := w.lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w.openWatch()
	firstMissed := 0
	for s := 1; s <= 900; s++ {
		w.others(10) // a busy cluster
		*failing = s >= 300
		if s%5 == 0 {
			w.probe(float64(s))
		}
		w.freshen(float64(s))
		if s%10 == 2 && s >= 300 {
			c.wrote(w.write(), sec(float64(s))) // lands elsewhere; never delivered here
			if firstMissed == 0 {
				firstMissed = s
			}
		}
		if s%60 == 0 {
			w.deliver(float64(s), watch.Bookmark, *cacheRV) // the cut-off cache's bookmark
		}
		sn := w.snap(float64(s) + 0.5)
		if firstMissed == 0 || float64(s)+0.5-float64(firstMissed) <= overdueAfter.Seconds()+1 {
			continue
		}
		truth := float64(s) + 0.5 - float64(firstMissed)
		if !sn.StalenessKnown || sn.StalenessSeconds < truth {
			t.Fatalf("%ds, reads failing since 300s, the store behind a canary write answered %.0fs ago: staleness %.0fs (known %v), state %s; want at least %.0fs", s, truth, sn.StalenessSeconds, sn.StalenessKnown, sn.State, truth)
		}
	}
}

// failableReads gives w's informer freshness reads on its own connection
// that fail while *failing and, when they answer, move its watch cache to
// the head: *cacheRV, what its next bookmark carries.
func failableReads(w *world) (failing *bool, cacheRV *uint64) {
	fail, rv := false, w.rv
	w.mon.freshenWith(w.is, func(context.Context) (string, error) {
		if fail {
			return "", context.DeadlineExceeded
		}
		rv = w.rv
		return strconv.FormatUint(w.rv, 10), nil
	}, true)
	return &fail, &rv
}

// readsFailing is when a quiet resource's freshness reads fail, and when
// its staleness must be known again (seconds).
type readsFailing struct{ from, until, recovered, end int }

// readsFail runs a quiet resource of a busy cluster, second by second to
// f.end, whose freshness reads on its own connection fail from f.from to
// f.until: one that answers moves its watch cache to the head (etcd's
// progress notification for it). step delivers, each second after the
// head probe and the reads, what the watch does, given the cache's RV.
// Staleness must be unknown (head_unknown) from two minutes after the
// reads began failing until they answer, and known, under 90s, from
// f.recovered.
func readsFail(w *world, f readsFailing, step func(s int, cacheRV uint64)) {
	t := w.t
	t.Helper()
	failing, cacheRV := failableReads(w)
	w.probe(0)
	w.sync(0)
	for s := 1; s <= f.end; s++ {
		w.others(10) // a busy cluster; this resource is idle
		*failing = s >= f.from && s < f.until
		if s%5 == 0 {
			w.probe(float64(s))
		}
		w.freshen(float64(s))
		step(s, *cacheRV)
		sn := w.snap(float64(s) + 0.5)
		switch {
		case s >= f.from+120 && s < f.until:
			if sn.StalenessKnown || sn.State != catalog.StateHeadUnknown {
				t.Fatalf("%ds, reads failing since %ds: staleness %.0fs (known %v), state %s; want unknown, %s", s, f.from, sn.StalenessSeconds, sn.StalenessKnown, sn.State, catalog.StateHeadUnknown)
			}
		case s >= f.recovered:
			if !sn.StalenessKnown || sn.StalenessSeconds > 90 || sn.State != catalog.StateOK {
				t.Fatalf("%ds, reads back since %ds: staleness %.0fs (known %v), state %s; want under 90s, ok", s, f.until, sn.StalenessSeconds, sn.StalenessKnown, sn.State)
			}
		}
	}
}

// A quiet resource's watch reopened at its cache's revision hears nothing
// until the cache moves past it (kube-apiserver skips the bookmarks), and
// only the informer's freshness reads move it between etcd's progress
// notifications: while they fail, its silence is what a watch without
// reads shows for a whole session, not a stall, and its staleness stays
// unknown (sim page seed 327: a 15-min hang of the informers' connection;
// the watch reopened on time, silent, and the staleness burn paged for a
// store missing nothing).
func TestAQuietWatchReopenedWhileReadsFailIsNotAStall(t *testing.T) {
	w := newWorld(t, 10_000)
	w.watchTimeout = 570 * time.Second
	timeout := int(w.watchTimeout.Seconds())
	opened, start := 0, w.rv
	readsFail(w, readsFailing{from: 300, until: 1500, recovered: 1700, end: 2100}, func(s int, cacheRV uint64) {
		if s-opened >= timeout {
			// the server ends the session on time; the reflector reopens
			// it from the informer's RV, the cache's
			w.endWatch(float64(s))
			w.openWatch()
			opened, start = s, cacheRV
		}
		// one a minute and one 2s before the timeout, when the cache
		// moved past the watch's start
		if age := s - opened; (age%60 == 0 || age == timeout-2) && age > 0 && cacheRV > start {
			w.deliver(float64(s), watch.Bookmark, cacheRV)
		}
	})
}

// #39, premise 2 in a still world (simulation seed 371288 of every widened
// dimension): no writes anywhere, events on an etcd of its own (revision
// 10) beside the main one (1,000) in the default space; an operator's
// informer of events started late listed at 10 with the head known at
// 1,000, and read RV lag 990 for good on a store missing nothing: the
// reference never confirmed events' etcd as the space's (nor can it
// contradict it into a space of its own while nothing moves). A list
// measured against the head of a source the reference has not confirmed
// is lag unknown until a delivery or a prompt proof measures it.
func TestAListBelowAHeadOfAnUnsettledEtcdIsLagUnknown(t *testing.T) {
	w := newWorld(t, 1000)
	r := w.mon.track(schema.GroupVersionResource{Version: "v1", Resource: "events"}, "")
	r.space.Load().addSource(r.name, func(context.Context) (string, error) { return "10", nil })
	w.probe(0)
	w.sync(0.1)
	inner := &scriptedLW{pages: []runtime.Object{page("10", "")}}
	lw := w.mon.instrument(r, inner)
	lw.state.setHook(func(h *informerHooks) {
		// synced, with freshness reads on its own HTTP/2 connection
		h.synced, h.ownReads = func() bool { return true }, true
		h.freshen = func(context.Context) (string, error) { return "10", nil }
	})
	for s := 5.0; s <= 30; s += 5 {
		w.probe(s) // nothing moves: no write anywhere
	}
	w.at(30.5)
	// the reflector's first list, from the watch cache (RV "0")
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	for _, sn := range w.mon.snapshots() {
		if sn.Resource == r.name && sn.LagKnown && sn.Lag > 0 {
			t.Errorf("events, listed at 10 beside a head of 1,000 its etcd was never confirmed to share: RV lag %d; want unknown (or 0)", sn.Lag)
		}
		if sn.Resource == r.name && sn.State != catalog.StateOK {
			t.Errorf("events: state %q; want ok (its lag unknown, not its head)", sn.State)
		}
	}
}

// #39, simulation seed 351463 (-sim.widen=http1 and others): three API
// servers, clients on HTTP/1.1 (no read reaches the watch's server),
// etcd's 10-minute progress notify; a watch session reopened just as its
// resource's writes paused for over 100 s. Its server sends nothing until
// its cache moves past the session's start, so the session, counted as
// busy, read as a stall: RV lag 1,020-1,191 (the other resources' writes)
// on a store missing nothing. Such a silence is a quiet cache's as well as
// a stall: lag unknown, and staleness grows, which pages a true stall.
func TestASilentBusySessionNoReadMovesIsLagUnknown(t *testing.T) {
	w := newWorld(t, 1000)
	w.watchTimeout = 5 * time.Minute
	w.probe(0)
	w.sync(0.1)
	w.deliver(1, watch.Bookmark, w.rv)
	for s := 2.0; s <= 30; s += 2 {
		w.deliver(s, watch.Modified, w.write()) // busy
		w.probe(s)
	}
	w.endWatch(30.5) // the server ends the session; the reflector reopens it
	w.openWatch()
	for s := 32.0; s <= 150; s += 2 {
		w.others(10) // writes elsewhere; none to this resource
		w.probe(s)
	}
	sn := w.snap(150)
	if sn.LagKnown && sn.Lag > 0 {
		t.Errorf("RV lag %d after a busy session's silence on a cache no read moves; want unknown", sn.Lag)
	}
	if !sn.StalenessKnown || sn.StalenessSeconds < 100 {
		t.Errorf("staleness %vs (known %v) after 120 s without a proof; want it growing", sn.StalenessSeconds, sn.StalenessKnown)
	}
}
