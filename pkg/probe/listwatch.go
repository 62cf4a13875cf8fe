package probe

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// listerWatcher wraps an informer's ListerWatcher and reports what passes
// through it to the informer's state: List pages and their durations,
// streaming watch-lists up to their initial-events-end bookmark, relists
// and their reasons, watch starts and errors, and the RV of every event and
// bookmark.
//
// Relists are counted here rather than in the reflector's watch error
// handler, which never sees a 410 delivered inside a running watch. A
// reflector may stream (client-go's default since 1.35) exactly when the
// wrapped ListerWatcher may: IsWatchListSemanticsUnSupported passes its
// answer through.
type listerWatcher struct {
	inner       cache.ListerWatcherWithContext
	state       *informer
	noWatchList bool
}

// IsWatchListSemanticsUnSupported reports the wrapped ListerWatcher's answer
// (fake clients, for one, cannot stream lists).
func (lw *listerWatcher) IsWatchListSemanticsUnSupported() bool { return lw.noWatchList }

var _ cache.ListerWatcherWithContext = (*listerWatcher)(nil)

// List implements cache.Lister.
func (lw *listerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// Watch implements cache.Watcher.
func (lw *listerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// ListWithContext times every page; the last page completes the list.
func (lw *listerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	s := lw.state
	start := s.res.clock.Now()
	if options.Continue == "" {
		s.listStarted(start, options.ResourceVersion == "")
	}
	obj, err := lw.inner.ListWithContext(ctx, options)
	now := s.res.clock.Now()
	if err != nil {
		s.res.observeList(catalog.KindList, listResult(err), now.Sub(start))
		s.listFailed(err)
		return obj, err
	}
	s.res.observeList(catalog.KindList, catalog.ResultSuccess, now.Sub(start))
	if !s.seesCanary.Load() && s.res.canary.Load() != nil && holdsCanary(obj, s.res) {
		s.seesCanary.Store(true)
	}
	if list, lerr := meta.ListAccessor(obj); lerr == nil && list.GetContinue() == "" {
		s.listEnded(list.GetResourceVersion(), now)
	}
	return obj, nil
}

// WatchWithContext starts a watch, or a watch-list when the options ask for
// initial events, and instruments the stream it returns.
func (lw *listerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	s := lw.state
	start := s.res.clock.Now()
	initial := options.SendInitialEvents != nil && *options.SendInitialEvents
	if initial {
		s.listStarted(start, options.ResourceVersion == "")
	}
	w, err := lw.inner.WatchWithContext(ctx, options)
	if err != nil {
		if initial {
			s.res.observeList(catalog.KindWatchList, listResult(err), s.res.clock.Now().Sub(start))
			s.listFailed(err)
		} else {
			s.watchFailed(err)
		}
		return w, err
	}
	var deadline time.Time
	if options.TimeoutSeconds != nil && *options.TimeoutSeconds > 0 {
		// the API server counts the timeout from when it started the
		// watch, which it had by the time its answer came back: from then
		// (the latest it can end), not from the request, which a frozen
		// or slow connection may hold for minutes before the server sees
		// it; the bookmark due 2s before the end would be expected that
		// much early (simulation seed 1005679: a read unmet by it read RV
		// lag 3,279 on an idle resource missing nothing)
		deadline = s.res.clock.Now().Add(time.Duration(*options.TimeoutSeconds) * time.Second)
	}
	if !initial {
		s.watchStarted(start, deadline, options.ResourceVersion)
	}
	iw := &instrumentedWatch{inner: w, state: s, initial: initial, start: start, deadline: deadline}
	if ow, ok := w.(observedWatch); ok {
		// it calls iw from its own goroutine: no hop between
		ow.observeWith(iw)
		return ow, nil
	}
	iw.out, iw.done = make(chan watch.Event), make(chan struct{})
	go iw.run()
	return iw, nil
}

// observedWatch is a watch that lets an observer see each of its events in
// its own goroutine, before it delivers them (metaWatch).
type observedWatch interface {
	watch.Interface
	// observeWith makes o observe the watch; called before ResultChan.
	observeWith(o watchObserver)
}

// watchObserver observes a watch's events on their way to the reflector.
type watchObserver interface {
	// observe sees ev before it is delivered and reports whether it waits
	// in the store queue.
	observe(ev watch.Event) (queued bool)
	// dropped: the watch was stopped before the reflector took the event
	// last observed.
	dropped(queued bool)
	// ended: the stream ended, by itself (closed) or stopped.
	ended(closed bool)
}

// instrumentedWatch forwards a watch's events unchanged, observing each on
// the way.
type instrumentedWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	state    *informer
	initial  bool // streaming the initial events of a watch-list
	start    time.Time
	deadline time.Time // when the watch's timeout ends it; zero: none
}

func (w *instrumentedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *instrumentedWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
}

func (w *instrumentedWatch) run() {
	defer close(w.out)
	in := w.inner.ResultChan()
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				w.ended(true)
				return
			}
			queued := w.observe(ev)
			select {
			case w.out <- ev:
			case <-w.done:
				w.dropped(queued)
				w.ended(false)
				return
			}
		case <-w.done:
			w.ended(false)
			return
		}
	}
}

func (w *instrumentedWatch) dropped(queued bool) {
	if queued {
		w.state.unqueueLast()
	}
}

func (w *instrumentedWatch) ended(closed bool) {
	if closed && w.initial {
		w.failStream(errWatchClosed)
	}
	w.state.watchEnded(w.state.res.clock.Now())
}

// failStream records a watch-list that ended before its initial events did.
func (w *instrumentedWatch) failStream(err error) {
	w.initial = false
	r := w.state.res
	r.observeList(catalog.KindWatchList, listResult(err), r.clock.Now().Sub(w.start))
	w.state.listFailed(err)
}

// observe records ev as it passes and reports whether it waits in the
// store queue.
func (w *instrumentedWatch) observe(ev watch.Event) (queued bool) {
	s := w.state
	now := s.res.clock.Now()
	switch ev.Type {
	case watch.Error:
		err := errorFromEvent(ev)
		if w.initial {
			w.failStream(err)
			return false
		}
		s.watchFailed(err)
	case watch.Bookmark:
		obj, ok := ev.Object.(metav1.Object)
		if !ok {
			return false
		}
		if w.initial {
			if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				w.initial = false
				s.res.observeList(catalog.KindWatchList, catalog.ResultSuccess, now.Sub(w.start))
				s.watchOpened(now, w.deadline, obj.GetResourceVersion()) // the stream goes on as the watch
				return s.listEnded(obj.GetResourceVersion(), now)
			}
			return false
		}
		return s.received(obj, now, watch.Bookmark)
	case watch.Added, watch.Modified, watch.Deleted:
		if w.initial {
			return false // part of the initial state, not a delivery
		}
		if obj, ok := ev.Object.(metav1.Object); ok {
			return s.received(obj, now, ev.Type)
		}
	}
	return false
}

// holdsCanary reports whether a list page holds r's canary object.
func holdsCanary(list runtime.Object, r *resource) bool {
	found := false
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil && r.isCanary(m.GetNamespace(), m.GetName()) {
			found = true
			return errFound
		}
		return nil
	})
	return found
}

// errFound ends a walk over a list's items early.
var errFound = errors.New("found")
