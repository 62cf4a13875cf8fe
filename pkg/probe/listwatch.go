package probe

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// listerWatcher wraps an informer's ListerWatcher and reports what passes
// through it to a tracker: List pages and their durations, streaming
// watch-lists up to their initial-events-end bookmark, relists and their
// reasons, watch starts and errors, and the RV of every event and bookmark.
//
// Relists are counted here rather than in the reflector's watch error
// handler, which never sees a 410 delivered inside a running watch. A
// reflector may stream (client-go's default since 1.35) exactly when the
// wrapped ListerWatcher may: IsWatchListSemanticsUnSupported passes its
// answer through.
type listerWatcher struct {
	inner       cache.ListerWatcherWithContext
	tracker     *tracker
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

// ListWithContext times every page and completes the list at its last page.
func (lw *listerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	t := lw.tracker
	if options.Continue == "" {
		t.startList(t.clock.Now(), options.ResourceVersion != "")
	}
	obj, err := lw.inner.ListWithContext(ctx, options)
	now := t.clock.Now()
	if err != nil {
		t.failList(listKindList, err, now)
		return obj, err
	}
	if list, lerr := meta.ListAccessor(obj); lerr == nil && list.GetContinue() == "" {
		t.endList(listKindList, list.GetResourceVersion(), now)
	}
	return obj, nil
}

// WatchWithContext starts a watch, or a watch-list when the options ask for
// initial events, and instruments the stream it returns.
func (lw *listerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	t := lw.tracker
	initial := options.SendInitialEvents != nil && *options.SendInitialEvents
	if initial {
		t.startList(t.clock.Now(), options.ResourceVersion != "")
	} else {
		t.watchStarts.Inc()
	}
	w, err := lw.inner.WatchWithContext(ctx, options)
	if err != nil {
		if initial {
			t.failList(listKindWatchList, err, t.clock.Now())
		} else {
			t.failWatch(err)
		}
		return w, err
	}
	iw := &instrumentedWatch{inner: w, out: make(chan watch.Event), done: make(chan struct{}), tracker: t, initial: initial}
	go iw.run()
	return iw, nil
}

// instrumentedWatch forwards a watch's events unchanged, observing each on
// the way.
type instrumentedWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	tracker  *tracker
	initial  bool // streaming the initial events of a watch-list
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
				if w.initial {
					w.tracker.failList(listKindWatchList, errWatchClosed, w.tracker.clock.Now())
				}
				return
			}
			w.observe(ev)
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
		case <-w.done:
			return
		}
	}
}

func (w *instrumentedWatch) observe(ev watch.Event) {
	t := w.tracker
	switch ev.Type {
	case watch.Error:
		err := errorFromEvent(ev)
		if w.initial {
			w.initial = false
			t.failList(listKindWatchList, err, t.clock.Now())
			return
		}
		t.failWatch(err)
	case watch.Bookmark:
		obj, ok := ev.Object.(metav1.Object)
		if !ok {
			return
		}
		if w.initial {
			if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				w.initial = false
				t.endList(listKindWatchList, obj.GetResourceVersion(), t.clock.Now())
			}
			return
		}
		t.observeEvent(obj, t.clock.Now(), false)
	case watch.Added, watch.Modified, watch.Deleted:
		if w.initial {
			return // part of the initial state, not a delivery
		}
		if obj, ok := ev.Object.(metav1.Object); ok {
			t.observeEvent(obj, t.clock.Now(), true)
		}
	}
}
