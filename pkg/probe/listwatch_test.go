package probe

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// scriptedLW is the inner ListerWatcher of a test: List answers pages in
// order, Watch hands out the test's fake watcher or an error.
type scriptedLW struct {
	pages    []runtime.Object // returned by successive List calls, consumed in order
	listErr  error
	watcher  *watch.FakeWatcher
	watchErr error
	lists    int
	onList   func() // called during each List, e.g. to move the clock
	onWatch  func() // called during each Watch, e.g. to move the clock
}

func (s *scriptedLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	if s.onList != nil {
		s.onList()
	}
	if s.listErr != nil {
		return nil, s.listErr
	}
	p := s.pages[0]
	s.pages = s.pages[1:]
	s.lists++
	return p, nil
}

func (s *scriptedLW) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	if s.onWatch != nil {
		s.onWatch()
	}
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	return s.watcher, nil
}

func (s *scriptedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}

func (s *scriptedLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

func page(rv, cont string) *metav1.PartialObjectMetadataList {
	return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
}

func obj(rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", ResourceVersion: rv}}
}

// initialEventsEnd is the bookmark that ends a watch-list's initial events.
func initialEventsEnd(rv string) *metav1.PartialObjectMetadata {
	b := obj(rv)
	b.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return b
}

// lwRig is a monitor with one tracker on a fake clock and its instrumented
// ListerWatcher around a scripted one.
type lwRig struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	mon   *Monitor
	tr    *resource
	is    *informer
	inner *scriptedLW
	lw    cache.ListerWatcherWithContext
}

func newLWRig(t *testing.T) *lwRig {
	clk := clocktesting.NewFakeClock(t0)
	mon := New(Options{Clock: clk})
	tr := mon.track(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "")
	inner := &scriptedLW{watcher: watch.NewFake()}
	lw := mon.instrument(tr, inner)
	lw.state.setHook(func(h *informerHooks) { h.synced = func() bool { return false } }) // as observe sets it for an informer not yet synced
	return &lwRig{t: t, clock: clk, mon: mon, tr: tr, is: lw.state, inner: inner, lw: lw}
}

// watch opens a watch through the instrumented ListerWatcher (a watch-list
// when initial), plays events on the inner watcher, each after the clock
// moved a second, then closes it and waits until every event passed.
func (r *lwRig) watch(initial bool, events ...watch.Event) error {
	opts := metav1.ListOptions{AllowWatchBookmarks: true}
	if initial {
		opts.SendInitialEvents = new(true)
	}
	r.inner.watcher = watch.NewFake()
	w, err := r.lw.WatchWithContext(context.Background(), opts)
	if err != nil {
		return err
	}
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for range w.ResultChan() {
			forwarded <- struct{}{}
		}
	}()
	for _, ev := range events {
		r.clock.Step(1e9)
		r.inner.watcher.Action(ev.Type, ev.Object)
		// the instrumented watch observes an event before it forwards it:
		// once forwarded, the clock may move on
		if _, ok := <-forwarded; !ok {
			r.t.Fatalf("the instrumented watch closed before forwarding %s", ev.Type)
		}
	}
	r.inner.watcher.Stop()
	if _, ok := <-forwarded; ok {
		r.t.Error("an event was forwarded that was never sent")
	}
	return nil
}

type lwWant struct {
	relists      [3]float64         // initial, expired, error
	lists        map[[2]string]int  // (kind, result) -> observations
	listErrors   map[string]float64 // reason -> count
	watchErrors  map[string]float64
	watchStarts  float64
	informerRV   uint64
	listDuration map[[2]string]float64 // (kind, result) -> sum of seconds
}

func (r *lwRig) check(name string, w lwWant) {
	r.t.Helper()
	m := r.mon.metrics
	relists := [3]float64{
		testutil.ToFloat64(m.Relists.WithLabelValues("configmaps", catalog.RelistInitial)),
		testutil.ToFloat64(m.Relists.WithLabelValues("configmaps", catalog.RelistExpired)),
		testutil.ToFloat64(m.Relists.WithLabelValues("configmaps", catalog.RelistError)),
	}
	if relists != w.relists {
		r.t.Errorf("%s: relists initial/expired/error %v, want %v", name, relists, w.relists)
	}
	for _, kind := range []string{catalog.KindList, catalog.KindWatchList} {
		for _, result := range []string{catalog.ResultSuccess, catalog.ResultError} {
			n, sum := histogram(r.t, m.ListDuration.WithLabelValues("configmaps", kind, result).(prometheus.Histogram))
			k := [2]string{kind, result}
			if int(n) != w.lists[k] {
				r.t.Errorf("%s: %d %s durations with result %s, want %d", name, n, kind, result, w.lists[k])
			}
			if want, ok := w.listDuration[k]; ok && sum != want {
				r.t.Errorf("%s: %s/%s durations sum to %vs, want %vs", name, kind, result, sum, want)
			}
		}
	}
	for reason, want := range w.listErrors {
		if got := testutil.ToFloat64(m.ListErrors.WithLabelValues("configmaps", reason)); got != want {
			r.t.Errorf("%s: list errors{%s} %v, want %v", name, reason, got, want)
		}
	}
	for reason, want := range w.watchErrors {
		if got := testutil.ToFloat64(m.WatchErrors.WithLabelValues("configmaps", reason)); got != want {
			r.t.Errorf("%s: watch errors{%s} %v, want %v", name, reason, got, want)
		}
	}
	if got := testutil.ToFloat64(m.WatchStarts.WithLabelValues("configmaps")); got != w.watchStarts {
		r.t.Errorf("%s: watch starts %v, want %v", name, got, w.watchStarts)
	}
	r.is.proofMu.Lock()
	rv := r.is.proof.RV()
	r.is.proofMu.Unlock()
	if rv != w.informerRV {
		r.t.Errorf("%s: informer RV %d, want %d", name, rv, w.informerRV)
	}
}

var (
	list      = [2]string{catalog.KindList, catalog.ResultSuccess}
	listErr   = [2]string{catalog.KindList, catalog.ResultError}
	stream    = [2]string{catalog.KindWatchList, catalog.ResultSuccess}
	streamErr = [2]string{catalog.KindWatchList, catalog.ResultError}
)

// The instrumented watch's state machine, one path per case, driven the way
// client-go's reflector drives it.
func TestInstrumentedListerWatcher(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 5 (9)")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("rbac"))
	for _, c := range []struct {
		name string
		run  func(r *lwRig)
		want lwWant
	}{{
		name: "watch-list: initial events, then the initial-events-end bookmark, then deliveries",
		run: func(r *lwRig) {
			_ = r.watch(true,
				watch.Event{Type: watch.Added, Object: obj("5")},
				watch.Event{Type: watch.Added, Object: obj("6")},
				watch.Event{Type: watch.Bookmark, Object: initialEventsEnd("10")},
				watch.Event{Type: watch.Modified, Object: obj("11")},
				watch.Event{Type: watch.Bookmark, Object: obj("12")})
		},
		want: lwWant{relists: [3]float64{1, 0, 0}, lists: map[[2]string]int{stream: 1},
			listDuration: map[[2]string]float64{stream: 3}, informerRV: 12},
	}, {
		name: "watch-list: an error event in the initial events fails the list",
		run: func(r *lwRig) {
			_ = r.watch(true,
				watch.Event{Type: watch.Added, Object: obj("5")},
				watch.Event{Type: watch.Error, Object: &gone.ErrStatus})
		},
		want: lwWant{relists: [3]float64{1, 0, 0}, lists: map[[2]string]int{streamErr: 1},
			listErrors: map[string]float64{catalog.ReasonExpired: 1}},
	}, {
		name: "watch-list: the stream closes before the initial-events-end bookmark",
		run: func(r *lwRig) {
			_ = r.watch(true, watch.Event{Type: watch.Added, Object: obj("5")})
		},
		want: lwWant{relists: [3]float64{1, 0, 0}, lists: map[[2]string]int{streamErr: 1},
			listErrors: map[string]float64{catalog.ReasonOther: 1}},
	}, {
		name: "watch-list refused, then the fallback List of two pages",
		run: func(r *lwRig) {
			r.inner.watchErr = forbidden
			if err := r.watch(true); err == nil {
				r.t.Error("the refused watch-list returned no error")
			}
			r.inner.watchErr = nil
			r.inner.pages = []runtime.Object{page("20", "next"), page("20", "")}
			r.clock.Step(1e9)
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
			r.clock.Step(2e9)
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500, Continue: "next"})
		},
		want: lwWant{relists: [3]float64{1, 0, 0}, lists: map[[2]string]int{streamErr: 1, list: 2},
			listErrors: map[string]float64{catalog.ReasonForbidden: 1}, informerRV: 20},
	}, {
		name: "synced informer: watch bookmarks and events advance the RV; a 410 in the stream makes the next list an expired relist",
		run: func(r *lwRig) {
			r.inner.pages = []runtime.Object{page("20", ""), page("40", "")}
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
			r.is.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
			_ = r.watch(false,
				watch.Event{Type: watch.Bookmark, Object: obj("25")},
				watch.Event{Type: watch.Modified, Object: obj("26")},
				watch.Event{Type: watch.Error, Object: &gone.ErrStatus})
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "26"})
		},
		want: lwWant{relists: [3]float64{1, 1, 0}, lists: map[[2]string]int{list: 2},
			watchErrors: map[string]float64{catalog.ReasonExpired: 1}, watchStarts: 1, informerRV: 40},
	}, {
		name: "a List that fails is an error observation with its reason",
		run: func(r *lwRig) {
			r.inner.listErr = forbidden
			_, _ = r.lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		},
		want: lwWant{relists: [3]float64{1, 0, 0}, lists: map[[2]string]int{listErr: 1},
			listErrors: map[string]float64{catalog.ReasonForbidden: 1}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			r := newLWRig(t)
			c.run(r)
			r.check(c.name, c.want)
		})
	}
}
