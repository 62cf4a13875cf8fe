package probe

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// tracker holds the sync state of one watched resource: its informers'
// states (the resource reports the worst), its RV space, the canary and
// convergence state when it has them, and the observers of its
// event-driven metrics, bound once to its `resource` label so the per-event
// path allocates nothing.
type tracker struct {
	name    string
	clock   clock.PassiveClock
	metrics *metrics
	probe   time.Duration // the head probe interval

	deliveryLag prometheus.Observer
	storeLag    prometheus.Observer
	unbounded   prometheus.Counter
	watchStarts prometheus.Counter
	regressions prometheus.Counter
	// recordDeliveries makes its informers record their deliveries, for
	// the stale-read check's reconcile read delay
	recordDeliveries atomic.Bool

	mu        sync.Mutex
	space     *space
	informers []*informerState
	canary    *canaryState
	converge  *convergence
}

func newTracker(name string, clk clock.PassiveClock, s *space, m *metrics, probeInterval time.Duration) *tracker {
	t := &tracker{
		name:        name,
		clock:       clk,
		space:       s,
		metrics:     m,
		probe:       probeInterval,
		deliveryLag: m.EventDeliveryLag.WithLabelValues(name),
		storeLag:    m.StoreLag.WithLabelValues(name),
		unbounded:   m.DeliveryUnbounded.WithLabelValues(name),
		watchStarts: m.WatchStarts.WithLabelValues(name),
		regressions: m.Regressions.WithLabelValues(name),
	}
	// Create the zero-valued series the dashboards and alerts rely on, so a
	// healthy resource shows 0 instead of no data and increase() sees the
	// first error.
	for _, reason := range []string{catalog.RelistInitial, catalog.RelistExpired, catalog.RelistError} {
		m.Relists.WithLabelValues(name, reason)
	}
	for _, reason := range errorReasons {
		m.ListErrors.WithLabelValues(name, reason)
		m.WatchErrors.WithLabelValues(name, reason)
		m.HeadProbeErrors.WithLabelValues(name, reason)
	}
	m.TimelineDropped.WithLabelValues(name)
	return t
}

// newInformer adds the state of one more informer of the resource.
func (t *tracker) newInformer() *informerState {
	s := newInformerState(t)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.informers = append(t.informers, s)
	return s
}

func (t *tracker) currentSpace() *space {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.space
}

// moveTo puts the resource in another RV space.
func (t *tracker) moveTo(s *space) {
	t.mu.Lock()
	old := t.space
	t.space = s
	informers := slices.Clone(t.informers)
	t.mu.Unlock()
	old.removeTracker(t)
	s.addTracker(t)
	for _, is := range informers {
		is.onRegression() // its RV proved nothing in the old space
	}
}

func (t *tracker) informerList() []*informerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.informers)
}

// onProbe updates every informer after the space's head probe, sent at
// sent, saw head.
func (t *tracker) onProbe(head uint64, sent time.Time) {
	sp, now := t.currentSpace(), t.clock.Now()
	for _, s := range t.informerList() {
		s.onProbe(sp, head, sent, now)
	}
}

// onRegression is called when the space's head went backwards (etcd
// restored from a backup): every RV remembered belongs to a lost history.
func (t *tracker) onRegression() {
	t.regressions.Inc()
	for _, s := range t.informerList() {
		s.onRegression()
	}
	t.mu.Lock()
	c := t.canary
	t.mu.Unlock()
	if c != nil {
		c.reset()
	}
}

// onHistoryLost is onRegression for a loss a write proved (see
// space.onHistoryLost).
func (t *tracker) onHistoryLost() {
	t.regressions.Inc()
	for _, s := range t.informerList() {
		s.onHistoryLost()
	}
	t.mu.Lock()
	c := t.canary
	t.mu.Unlock()
	if c != nil {
		c.reset()
	}
}

// isCanary reports whether obj is the resource's canary object.
func (t *tracker) isCanary(obj metav1.Object) bool {
	t.mu.Lock()
	canary := t.canary
	t.mu.Unlock()
	return canary != nil && obj.GetName() == canary.name && obj.GetNamespace() == canary.namespace
}

// observeDelivery records the delivery lag of an event at rv, in the store
// since now, and, for an event of the canary object, its delivery.
func (t *tracker) observeDelivery(s *informerState, sp *space, isCanary bool, rv uint64, now time.Time) {
	t.mu.Lock()
	canary := t.canary
	t.mu.Unlock()
	if isCanary && canary != nil {
		if sent, ok := canary.delivered(rv, now); ok {
			s.confirmFresh(sent, now)
		}
	}
	// The first probe that answered with the head at or past rv bounds the
	// commit time from above, so now minus its answer is a lower bound of
	// the delay, as tight as the probes were frequent. Without one, the
	// event committed after the latest probe's request: when that probe is
	// recent, 0 is a true lower bound. After a probe outage (no sample, or a
	// long gap before the bounding one) the commit could lie anywhere in
	// the outage: the delay is unknown, and counted as such, not as 0.
	outage := 2*t.probe + 5*time.Second
	if bound, after, ok := sp.timeline.commitBound(rv); ok {
		if after.IsZero() || bound.Sub(after) <= outage {
			t.deliveryLag.Observe(max(0, now.Sub(bound).Seconds()))
		} else {
			t.unbounded.Inc()
		}
		return
	}
	if age, ok := sp.headAge(now); ok {
		if age <= outage {
			t.deliveryLag.Observe(0)
		} else {
			t.unbounded.Inc()
		}
	}
}

// canaryCovered records that a list at rv holds the canary object as of rv:
// every canary write up to rv reached the cache, if not as its own event.
func (t *tracker) canaryCovered(s *informerState, rv uint64, now time.Time) {
	t.mu.Lock()
	canary := t.canary
	t.mu.Unlock()
	if canary == nil {
		return
	}
	if sent, ok := canary.delivered(rv, now); ok {
		s.confirmFresh(sent, now)
	}
}

// confirmFresh records a canary write sent at at and delivered (or found
// already delivered) at now: every informer holding the canary is fresh as
// of at.
func (t *tracker) confirmFresh(at, now time.Time) {
	for _, s := range t.informerList() {
		s.confirmFresh(at, now)
	}
}

// observeList records the duration of one List page, watch-list or head
// probe. Its series are created on first use, not up front: a resource
// lists rarely, and four idle histograms per resource would dominate the
// scrape.
func (t *tracker) observeList(kind, result string, d time.Duration) {
	t.metrics.ListDuration.WithLabelValues(t.name, kind, result).Observe(d.Seconds())
}

// resourceState names what limits the resource's signals (the state label
// of rvsync_resource_state).
func resourceState(sn informerSnapshot) string {
	switch {
	case sn.ahead:
		return catalog.StateAheadOfHead
	case sn.opaque:
		return catalog.StateOpaqueRV
	case sn.headUnknown:
		return catalog.StateHeadUnknown
	}
	return catalog.StateOK
}

// stateRank orders states from best to worst.
var stateRank = map[string]int{catalog.StateOK: 0, catalog.StateHeadUnknown: 1, catalog.StateOpaqueRV: 2, catalog.StateAheadOfHead: 3}

// snapshot returns the scrape-time state of the resource: the worst of its
// live informers. ok is false once every informer it had has stopped (a
// controller-runtime cache removed it).
func (t *tracker) snapshot(now time.Time) (snapshot, bool) {
	t.mu.Lock()
	sp, canary, converge := t.space, t.canary, t.converge
	informers := slices.Clone(t.informers)
	t.mu.Unlock()

	s := snapshot{Resource: t.name, Space: sp.name, Synced: true, State: catalog.StateOK}
	live := 0
	for _, is := range informers {
		in := is.snapshot(sp, now)
		if in.stopped {
			continue
		}
		live++
		s.Synced = s.Synced && in.synced
		s.Objects = max(s.Objects, in.objects)
		s.QueueDepth = max(s.QueueDepth, in.queueDepth)
		s.QueueOldestSeconds = max(s.QueueOldestSeconds, in.queueOldest.Seconds())
		if in.rvKnown && (!s.InformerKnown || in.rv < s.InformerRV) {
			s.InformerKnown, s.InformerRV = true, in.rv
		}
		if in.lagKnown && (!s.LagKnown || in.lag > s.Lag) {
			s.LagKnown, s.Lag = true, in.lag
		}
		if in.stalenessKnown && (!s.StalenessKnown || in.staleness.Seconds() > s.StalenessSeconds) {
			s.StalenessKnown, s.StalenessSeconds = true, max(0, in.staleness.Seconds())
		}
		if in.silenceKnown && (!s.SilenceKnown || in.silence.Seconds() > s.SilenceSeconds) {
			s.SilenceKnown, s.SilenceSeconds = true, max(0, in.silence.Seconds())
		}
		s.BookmarkPeriodSeconds = max(s.BookmarkPeriodSeconds, in.bookmarkPeriod.Seconds())
		if in.proofKnown && (!s.ProofPeriodKnown || in.proofPeriod.Seconds() > s.ProofPeriodSeconds) {
			s.ProofPeriodKnown, s.ProofPeriodSeconds = true, in.proofPeriod.Seconds()
		}
		if st := resourceState(in); stateRank[st] > stateRank[s.State] {
			s.State = st
		}
	}
	if live == 0 {
		s.Synced = false
		if len(informers) > 0 {
			return snapshot{}, false
		}
	}
	if s.State != catalog.StateOK {
		// what limits the signals makes them unknown, not 0 or growing
		s.LagKnown = false
		if s.State != catalog.StateAheadOfHead {
			s.StalenessKnown, s.ProofPeriodKnown = false, false
		}
	}
	if canary != nil {
		s.CanaryLastDelivered = canary.lastDeliveredUnix()
	}
	if converge != nil {
		s.Convergence = converge.snapshot(now)
	}
	if sp.hasSources() {
		if head, _, ok := sp.timeline.latest(); ok {
			s.HeadKnown, s.HeadRV = true, head
		}
		if age, ok := sp.headAge(now); ok {
			s.HeadAgeKnown, s.HeadAgeSeconds = true, age.Seconds()
		}
	}
	if s.State == catalog.StateOpaqueRV {
		s.HeadKnown, s.InformerKnown = false, false
	}
	return s, true
}
