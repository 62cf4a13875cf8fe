package probe

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// resource is one watched resource: its informers (the resource reports
// the worst of them), its RV space, its canary and convergence state when
// it has them, and the observers of its event-driven metrics, bound once
// to its `resource` label so the per-event path allocates nothing.
//
// It is configuration and a directory, not a stage: its informers own
// their stages, its space owns the head.
type resource struct {
	name     string
	clock    clock.PassiveClock
	metrics  *metrics
	interval time.Duration // the head probe's

	deliveryLag prometheus.Observer
	storeLag    prometheus.Observer
	unbounded   prometheus.Counter
	watchStarts prometheus.Counter
	regressions prometheus.Counter
	// recordDeliveries makes its informers record when they delivered each
	// object's version, for the stale-read check's reconcile read delay
	recordDeliveries atomic.Bool

	space    atomic.Pointer[space]
	canary   atomic.Pointer[canaryState]
	converge atomic.Pointer[convergence]
	// owing: what its informers owe one another (several informers only)
	owing owing
	// incident: when an informer of it last had an incident on its path
	// (Unix nanoseconds; 0: none; see noteIncident)
	incident atomic.Int64

	mu        sync.Mutex
	informers []*informer
}

func newResource(name string, clk clock.PassiveClock, s *space, m *metrics, interval time.Duration) *resource {
	r := &resource{
		name:        name,
		clock:       clk,
		metrics:     m,
		interval:    interval,
		deliveryLag: m.EventDeliveryLag.WithLabelValues(name),
		storeLag:    m.StoreLag.WithLabelValues(name),
		unbounded:   m.DeliveryUnbounded.WithLabelValues(name),
		watchStarts: m.WatchStarts.WithLabelValues(name),
		regressions: m.Regressions.WithLabelValues(name),
	}
	r.space.Store(s)
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
	return r
}

// newInformer adds one more informer of the resource.
func (r *resource) newInformer() *informer {
	in := newInformer(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.informers = append(r.informers, in)
	return in
}

// siblings returns its informers when there are several, else nil
// (without allocating: the per-event path calls it).
func (r *resource) siblings() []*informer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.informers) < 2 {
		return nil
	}
	return slices.Clone(r.informers)
}

// noteIncident records that an informer of r had an incident on its path
// at t: its watch was silent past its cadence or broken, or a freshness
// read of it, sent then, did not answer. Its siblings may share the watch
// cache its reads move (proof.Env.Incident).
func (r *resource) noteIncident(t time.Time) {
	if t.IsZero() || t.UnixNano() <= r.incident.Load() {
		return // (per event: one atomic load)
	}
	for {
		old := r.incident.Load()
		if t.UnixNano() <= old || r.incident.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// lastIncident returns when an informer of r last had an incident on its
// path (zero: none).
func (r *resource) lastIncident() time.Time {
	if n := r.incident.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (r *resource) informerList() []*informer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.informers)
}

// readAnswered tells r's informers that a consistent read of r answered
// at at: served false when the API server said it does not serve r (see
// proof.Watch.ReadUnserved).
func (r *resource) readAnswered(at time.Time, served bool) {
	for _, in := range r.informerList() {
		in.wireMu.Lock()
		if served {
			in.wire.ReadServed()
		} else {
			in.wire.ReadUnserved(at)
		}
		in.wireMu.Unlock()
	}
}

// isCanary reports whether the object namespace/name is the resource's
// canary object.
func (r *resource) isCanary(namespace, name string) bool {
	c := r.canary.Load()
	return c != nil && name == c.name && namespace == c.namespace
}

// observeList records the duration of one List page, watch-list or head
// probe. Its series are created on first use, not up front: a resource
// lists rarely, and four idle histograms per resource would dominate the
// scrape.
func (r *resource) observeList(kind, result string, d time.Duration) {
	r.metrics.ListDuration.WithLabelValues(r.name, kind, result).Observe(d.Seconds())
}

// stateRank orders states from best to worst: the resource reports its
// worst informer's.
var stateRank = map[string]int{catalog.StateOK: 0, catalog.StateNoBookmarks: 1, catalog.StateHeadUnknown: 2, catalog.StateUnserved: 3, catalog.StateOpaqueRV: 4, catalog.StateAheadOfHead: 5}

// snapshot returns the scrape-time state of the resource: the worst of its
// live informers. ok is false once every informer it had has stopped (a
// controller-runtime cache removed it). It changes nothing.
func (r *resource) snapshot(now time.Time) (snapshot, bool) {
	sp := r.space.Load()
	informers := r.informerList()
	s := snapshot{Resource: r.name, Space: sp.name, Synced: true, State: catalog.StateOK}
	live, unserved := 0, false
	for _, in := range informers {
		v := in.snapshot(sp, now)
		if v.stopped {
			continue
		}
		live++
		unserved = unserved || v.state == catalog.StateUnserved
		s.worst(v)
	}
	if s.staleUnknown && !s.staleProven {
		s.StalenessKnown, s.StalenessSeconds = false, 0
	}
	if unserved {
		// a List answered 404 (a CRD deleted): nothing to watch, so no
		// informer's silence, counting from before, is a stall of it
		s.SilenceKnown, s.SilenceSeconds = false, 0
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
		if s.State != catalog.StateAheadOfHead && s.State != catalog.StateHeadUnknown {
			s.StalenessKnown, s.ProofPeriodKnown = false, false
		}
	}
	if c := r.canary.Load(); c != nil {
		s.CanaryLastDelivered = c.lastDeliveredUnix()
	}
	if c := r.converge.Load(); c != nil {
		s.Convergence = c.snapshot(now)
	}
	head := sp.head(now)
	s.HeadKnown, s.HeadRV = head.known, head.rv
	s.HeadAgeKnown, s.HeadAgeSeconds = head.ageKnown, head.age.Seconds()
	if s.State == catalog.StateOpaqueRV {
		s.HeadKnown, s.InformerKnown = false, false
	}
	return s, true
}
