package probe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// tracker holds the sync state of one watched resource: the informer's RV,
// the lag and freshness derived from its RV space's head timeline, and the
// observers of its event-driven metrics, bound once to its `resource` label
// so the per-event path allocates nothing.
type tracker struct {
	name    string
	clock   clock.PassiveClock
	space   *space
	metrics *metrics

	deliveryLag prometheus.Observer
	watchStarts prometheus.Counter
	regressions prometheus.Counter

	objects atomic.Int64

	mu          sync.Mutex
	informerRV  uint64 // 0: unknown
	opaque      bool   // an RV that is not an integer was seen
	fresh       time.Time
	lag         uint64
	lagKnown    bool
	prevRV      uint64 // informer RV at the previous probe, to spot "ahead of head"
	listed      bool   // the initial list was started (and counted)
	expired     bool   // the latest failure was a 410: the next list is an "expired" relist
	listStart   time.Time
	listIsRVAny bool        // the list in progress may be served from a cache (RV != "")
	synced      func() bool // the informer's HasSynced, once Observe connected it
	canary      *canaryState
	converge    *convergence
}

const (
	listKindList = iota
	listKindWatchList
)

func newTracker(name string, clk clock.PassiveClock, s *space, m *metrics) *tracker {
	t := &tracker{
		name:        name,
		clock:       clk,
		space:       s,
		metrics:     m,
		deliveryLag: m.EventDeliveryLag.WithLabelValues(name),
		watchStarts: m.WatchStarts.WithLabelValues(name),
		regressions: m.Regressions.WithLabelValues(name),
	}
	// Create the zero-valued series the dashboards and alerts rely on, so a
	// healthy resource shows 0 instead of no data.
	for _, reason := range []string{catalog.RelistInitial, catalog.RelistExpired, catalog.RelistError} {
		m.Relists.WithLabelValues(name, reason)
	}
	m.TimelineDropped.WithLabelValues(name)
	return t
}

// observeEvent records a watch event (or, with isEvent false, a bookmark)
// for obj, delivered now.
func (t *tracker) observeEvent(obj metav1.Object, now time.Time, isEvent bool) {
	rv, ok := parseRV(obj.GetResourceVersion())
	if !ok {
		t.markOpaque()
		return
	}
	t.mu.Lock()
	if rv > t.informerRV {
		t.informerRV = rv
		t.refreshFreshLocked()
	}
	canary := t.canary
	t.mu.Unlock()
	if !isEvent {
		return
	}
	if canary != nil && obj.GetName() == canary.name && obj.GetNamespace() == canary.namespace {
		if sent, ok := canary.delivered(rv, now); ok {
			t.confirmFresh(sent)
		}
	}
	// The first probe that saw the head at or past rv bounds the commit time
	// from above, so now minus that probe's time is a lower bound of the lag.
	// An event not yet seen by any probe is younger than one probe interval;
	// without a head probe (embedded use) there is no bound at all.
	bound, ok := t.space.timeline.CommitBound(rv)
	switch {
	case ok:
		t.deliveryLag.Observe(max(0, now.Sub(bound).Seconds()))
	case t.space.probing():
		t.deliveryLag.Observe(0)
	}
}

// refreshFreshLocked moves the freshness time forward to the latest probe
// whose head the informer RV covers. t.mu must be held.
func (t *tracker) refreshFreshLocked() {
	if at, ok := t.space.timeline.FreshAt(t.informerRV); ok && at.After(t.fresh) {
		t.fresh = at
	}
}

// confirmFresh records that the cache provably held everything committed
// before at: a canary written at that time was delivered.
func (t *tracker) confirmFresh(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at.After(t.fresh) {
		t.fresh = at
	}
}

func (t *tracker) markOpaque() {
	t.mu.Lock()
	first := !t.opaque
	t.opaque = true
	t.informerRV, t.lagKnown = 0, false
	t.mu.Unlock()
	if first {
		t.metrics.ListErrors.WithLabelValues(t.name, catalog.ReasonOpaqueRV).Inc()
	}
}

// onProbe recomputes lag and freshness after the space's head probe saw head.
func (t *tracker) onProbe(head uint64, regressed bool) {
	if regressed {
		t.regressions.Inc()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if regressed {
		// The informer's RV belongs to a history the store no longer has:
		// it proves nothing until the informer lists again. Staleness keeps
		// growing from the last time freshness was proven.
		t.informerRV, t.lagKnown, t.prevRV = 0, false, 0
		return
	}
	if t.opaque || t.informerRV == 0 {
		return
	}
	if t.prevRV > head && !regressed {
		// The informer held an RV before the previous probe that the head
		// still has not reached: the resource does not live in this RV space.
		t.metrics.HeadProbeErrors.WithLabelValues(t.name, catalog.ReasonAheadOfHead).Inc()
	}
	t.prevRV = t.informerRV
	t.lag, t.lagKnown = 0, true
	if head > t.informerRV {
		t.lag = head - t.informerRV
	}
	t.refreshFreshLocked()
}

// startList is called when a List (first page) or a watch-list begins.
func (t *tracker) startList(now time.Time, rvAny bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listStart, t.listIsRVAny = now, rvAny
	reason := ""
	switch {
	case !t.listed:
		t.listed = true
		reason = catalog.RelistInitial
	case t.synced == nil || t.synced():
		reason = catalog.RelistError
		if t.expired {
			reason = catalog.RelistExpired
		}
	default:
		return // a retry of the initial list
	}
	t.expired = false
	t.metrics.Relists.WithLabelValues(t.name, reason).Inc()
}

// endList is called when a List's last page or a watch-list's
// initial-events-end bookmark arrives with the list's RV.
func (t *tracker) endList(kind int, rvs string, now time.Time) {
	t.mu.Lock()
	start, consistent := t.listStart, !t.listIsRVAny
	t.mu.Unlock()
	t.observeList(kind, catalog.ResultSuccess, now.Sub(start))
	rv, ok := parseRV(rvs)
	if !ok {
		t.markOpaque()
		return
	}
	t.mu.Lock()
	if t.opaque {
		t.mu.Unlock()
		return
	}
	if rv < t.informerRV {
		t.regressions.Inc()
		t.prevRV = 0
	}
	t.informerRV = rv
	if consistent && start.After(t.fresh) {
		// A consistent read (RV "") holds everything committed before it began.
		t.fresh = start
	}
	t.refreshFreshLocked()
	canary := t.canary
	t.mu.Unlock()
	// A list at rv holds the canary object as of rv: every canary write up
	// to rv reached the cache, if not as its own event.
	if canary != nil {
		if sent, ok := canary.delivered(rv, now); ok {
			t.confirmFresh(sent)
		}
	}
}

// observeList records a list's duration. Its series are created on first
// use, not up front: a resource lists rarely, and four idle histograms per
// resource would dominate the scrape.
func (t *tracker) observeList(kind int, result string, d time.Duration) {
	k := catalog.KindList
	if kind == listKindWatchList {
		k = catalog.KindWatchList
	}
	t.metrics.ListDuration.WithLabelValues(t.name, k, result).Observe(d.Seconds())
}

// failList records a List page or watch-list that failed.
func (t *tracker) failList(kind int, err error, now time.Time) {
	t.mu.Lock()
	start := t.listStart
	t.noteFailureLocked(err)
	t.mu.Unlock()
	t.observeList(kind, catalog.ResultError, now.Sub(start))
	t.metrics.ListErrors.WithLabelValues(t.name, reasonOf(err)).Inc()
}

// failWatch records a watch call that failed or an error event in a watch.
func (t *tracker) failWatch(err error) {
	t.mu.Lock()
	t.noteFailureLocked(err)
	t.mu.Unlock()
	t.metrics.WatchErrors.WithLabelValues(t.name, reasonOf(err)).Inc()
}

func (t *tracker) noteFailureLocked(err error) {
	if reasonOf(err) == catalog.ReasonExpired {
		t.expired = true
	}
}

// snapshot returns the scrape-time state of the resource.
func (t *tracker) snapshot(now time.Time) snapshot {
	t.mu.Lock()
	synced, canary, converge := t.synced, t.canary, t.converge
	opaque, informerRV, lagKnown, lag, fresh := t.opaque, t.informerRV, t.lagKnown, t.lag, t.fresh
	t.mu.Unlock()

	s := snapshot{Resource: t.name, Objects: int(t.objects.Load())}
	if synced != nil {
		s.Synced = synced()
	}
	if canary != nil {
		s.CanaryLastDelivered = canary.lastDeliveredUnix()
	}
	if converge != nil {
		s.Convergence = converge.snapshot(now)
	}
	if opaque {
		return s
	}
	s.HeadRV, _, s.HeadKnown = t.space.timeline.Latest()
	s.InformerKnown, s.InformerRV = informerRV != 0, informerRV
	s.LagKnown, s.Lag = lagKnown, lag
	if !fresh.IsZero() {
		s.StalenessKnown = true
		s.StalenessSeconds = max(0, now.Sub(fresh).Seconds())
	}
	return s
}
