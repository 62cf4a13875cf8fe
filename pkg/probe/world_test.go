package probe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// world is a scripted cluster for truth tests: one etcd whose revision the
// test advances (writes to this resource or to others), a head probe that
// answers with it (or fails, or takes time), and one informer of the
// resource whose watch the test drives event by event. Everything runs on
// a fake clock, so each signal can be compared with what is true.
type world struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	mon   *Monitor
	gvr   schema.GroupVersionResource
	tr    *resource
	is    *informer
	rv    uint64 // etcd's revision: the head

	probeErr  error         // the head probe fails with it when set
	probeTook time.Duration // the head probe's response arrives this long after its request
	probeSaw  func() uint64 // what the probe sees; default the revision when the request arrives

	inner        *scriptedLW
	lw           cache.ListerWatcherWithContext
	watchTimeout time.Duration // the timeout the informer's watches ask for; 0: none
	fwd          chan struct{}
}

const probeEvery = 5 * time.Second

func newWorld(t *testing.T, start uint64) *world {
	clk := clocktesting.NewFakeClock(t0)
	w := &world{t: t, clock: clk, rv: start}
	w.mon = New(Options{Clock: clk, ProbeInterval: probeEvery})
	w.gvr = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	w.tr = w.mon.track(w.gvr, "")
	w.tr.space.Load().addSource(w.tr.name, w.headFunc)
	w.inner = &scriptedLW{}
	lw := w.mon.instrument(w.tr, w.inner)
	w.is, w.lw = lw.state, lw
	w.is.setHook(func(h *informerHooks) { h.synced = func() bool { return true } })
	return w
}

func (w *world) headFunc(context.Context) (string, error) {
	if w.probeErr != nil {
		return "", w.probeErr
	}
	saw := w.rv
	if w.probeSaw != nil {
		saw = w.probeSaw()
	}
	w.clock.Step(w.probeTook)
	return strconv.FormatUint(saw, 10), nil
}

// at moves the clock to s seconds after t0.
func (w *world) at(s float64) { w.clock.SetTime(sec(s)) }

// probe runs one head probe at s.
func (w *world) probe(s float64) {
	w.at(s)
	var wg sync.WaitGroup
	w.mon.probe(context.Background(), w.tr.space.Load(), &wg)
	wg.Wait()
}

// probeAll runs one head probe of every space at s.
func (w *world) probeAll(s float64) {
	w.at(s)
	var wg sync.WaitGroup
	for _, sp := range w.mon.probedSpaces() {
		w.mon.probe(context.Background(), sp, &wg)
	}
	wg.Wait()
}

// freshen sends, at s, the freshness reads that are due, and waits for
// them.
func (w *world) freshen(s float64) {
	w.at(s)
	var wg sync.WaitGroup
	w.mon.freshen(context.Background(), &wg)
	wg.Wait()
}

// sync lists the resource consistently at s (RV ""), then opens a watch.
func (w *world) sync(s float64) {
	w.at(s)
	w.inner.pages = []runtime.Object{page(strconv.FormatUint(w.rv, 10), "")}
	w.inner.lists = 0
	if _, err := w.lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.openWatch()
}

func (w *world) openWatch() {
	w.inner.watcher = watch.NewFake()
	opts := metav1.ListOptions{AllowWatchBookmarks: true}
	if w.watchTimeout > 0 {
		opts.TimeoutSeconds = new(int64(w.watchTimeout.Seconds()))
	}
	iw, err := w.lw.WatchWithContext(context.Background(), opts)
	if err != nil {
		w.t.Fatal(err)
	}
	w.fwd = make(chan struct{})
	go func() {
		for range iw.ResultChan() {
			w.fwd <- struct{}{}
		}
		close(w.fwd)
	}()
}

// deliver delivers a watch event (or bookmark) with RV rv at s.
func (w *world) deliver(s float64, typ watch.EventType, rv uint64) {
	w.at(s)
	w.inner.watcher.Action(typ, obj(strconv.FormatUint(rv, 10)))
	<-w.fwd
}

// endWatch ends the open watch at s, as the API server does at its timeout.
func (w *world) endWatch(s float64) {
	w.at(s)
	w.inner.watcher.Stop()
	for range w.fwd {
	}
}

// idleSecond runs second s of a busy cluster (200 writes/s elsewhere)
// around this idle resource: a head probe every 5s, the freshness reads
// that are due, and the API server's bookmarks to the watch opened at
// opened, carrying the watch cache's RV *cacheRV: one a minute (the next
// due at *next) and one 2s before its timeout. It reports whether s is
// the timeout, which it leaves to the caller.
func (w *world) idleSecond(s int, opened float64, next *float64, cacheRV *uint64) (timeout bool) {
	w.others(200)
	if s%5 == 0 {
		w.probe(float64(s))
	}
	w.freshen(float64(s))
	switch deadline := opened + w.watchTimeout.Seconds(); {
	case float64(s) == deadline-2:
		w.deliver(float64(s), watch.Bookmark, *cacheRV)
	case float64(s) == deadline:
		return true
	case float64(s) == *next:
		w.deliver(float64(s), watch.Bookmark, *cacheRV)
		*next += 60
	}
	return false
}

// write commits one write to this resource; it returns its RV.
func (w *world) write() uint64 { w.rv++; return w.rv }

// otherEtcd watches resource (of the core group) in the default RV space,
// though it lives on an etcd of its own, at revision rv: its head reads
// answer that etcd's revision, 3 more each time.
func (w *world) otherEtcd(resource string, rv uint64) *resource {
	var rev atomic.Uint64
	rev.Store(rv)
	return w.onEtcd(resource, &rev)
}

// onEtcd watches resource (of the core group) in the default RV space,
// though it lives on an etcd whose revision is rev: its head reads
// answer it, 3 more each time (resources given one rev share that etcd;
// the head probe reads them at once).
func (w *world) onEtcd(resource string, rev *atomic.Uint64) *resource {
	r := w.mon.track(schema.GroupVersionResource{Version: "v1", Resource: resource}, "")
	r.space.Load().addSource(r.name, func(context.Context) (string, error) {
		return strconv.FormatUint(rev.Add(3), 10), nil
	})
	return r
}

// others commits n writes to other resources of the same etcd.
func (w *world) others(n uint64) { w.rv += n }

func (w *world) snap(s float64) snapshot {
	w.at(s)
	for _, sn := range w.mon.snapshots() {
		if sn.Resource == w.tr.name {
			return sn
		}
	}
	w.t.Fatalf("no snapshot of %s", w.tr.name)
	return snapshot{}
}

func (w *world) String() string { return fmt.Sprintf("rv %d", w.rv) }

var (
	errRefused = errors.New("connection refused")
	errGone    = apierrors.NewResourceExpired("too old resource version")
)
