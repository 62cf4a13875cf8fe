package probe

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// headFunc returns the current head resource version of one resource: the
// RV of a consistent List with limit=1.
type headFunc func(ctx context.Context) (string, error)

// metadataHead returns a headFunc that lists gvr's metadata with limit=1 and
// resourceVersion "" — a consistent read that kube-apiserver (1.34+) serves
// from its watch cache once the cache caught up with etcd's current
// revision, asking etcd for a progress notification if it has to wait. So
// the read also brings that resource's watch cache up to date, and its next
// bookmark carries the current revision (see Monitor.freshen).
func metadataHead(client metadata.Interface, gvr schema.GroupVersionResource) headFunc {
	return func(ctx context.Context) (string, error) {
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		return list.GetResourceVersion(), nil
	}
}

type headSource struct {
	resource string
	head     headFunc
	id       int32
}

// space is an RV space: the resources whose RVs come from one etcd (by
// default, the whole cluster). One head probe serves all of them, so the
// API-server cost does not grow with the number of resources.
//
// Every consistent read of a resource of the space is a head sample: the
// head probe's (sticky to the source that answered last, falling back
// through the others) and the freshness reads. A sample whose head is
// below the timeline's, from a probe sent after the timeline's latest
// answer, contradicts one etcd's monotonic revision: either etcd was
// restored from a backup, or a resource of another etcd (its own
// --etcd-servers-overrides, an extension API server) sits in this space.
// The space holds such a sample until another source settles it: a second
// source agreeing on the lower head is a restore, unless a single source
// alone ever saw the higher heads (that one is the foreign resource); a
// second source agreeing with the timeline makes the contradicting source
// the foreign one. A foreign resource moves to an RV space of its own, and
// is never again a source of this one.
type space struct {
	name     string
	timeline *timeline
	clock    clock.PassiveClock
	metrics  *metrics
	log      logr.Logger
	interval time.Duration
	// split moves a resource found to live in another etcd to a space of
	// its own, which it returns.
	split func(resource string) *space

	mu          sync.Mutex
	trackers    []*tracker
	sources     []headSource
	nextID      int32
	good        int       // index of the source that answered last
	opaque      bool      // the head RV is not an integer
	lastSent    time.Time // request time of the latest head probe that answered
	lastDropped uint64
	suspect     *heldSample // a sample that contradicted the timeline, not yet settled
	// lostWrite is the RV of the write that proved the history lost, until
	// a write lands above the reads again: one loss, counted once.
	lostWrite uint64
	backoff   map[int32]backoffState
}

// heldSample is a head sample that contradicted the timeline.
type heldSample struct {
	source     int32
	resource   string
	rv         uint64
	sent, recv time.Time
	probes     int // probes since it was held, to settle it when no other source answers
}

// backoffState skips a failing source for a few probes, so a forbidden
// resource does not cost a failed request every interval.
type backoffState struct {
	skip, failures int
}

// settleAfter is how many probes a held sample waits for another source
// before a single-source space takes it as a restore.
const settleAfter = 3

func (s *space) addTracker(t *tracker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trackers = append(s.trackers, t)
}

func (s *space) removeTracker(t *tracker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trackers = slices.DeleteFunc(s.trackers, func(x *tracker) bool { return x == t })
}

// addSource makes resource a head source of the space, once.
func (s *space) addSource(resource string, head headFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.sources, func(src headSource) bool { return src.resource == resource }) {
		return
	}
	s.sources = append(s.sources, headSource{resource: resource, head: head, id: s.nextID})
	s.nextID++
}

// hasSources reports whether the space can be probed.
func (s *space) hasSources() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sources) > 0
}

// headAge returns how long ago the latest head probe that answered was
// requested. Freshness reads are head samples too, but they are sparse (one
// per quiet informer per bookmark period) and ride the informers'
// connection: when the head probe fails, the head is unknown.
func (s *space) headAge(now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastSent.IsZero() || s.opaque {
		return 0, false
	}
	return now.Sub(s.lastSent), true
}

// headUnknownAfter is how old the latest head sample may get before lag and
// staleness are unknown: a few missed probes, never less than 15s.
func (s *space) headUnknownAfter() time.Duration { return max(3*s.interval, 15*time.Second) }

// probe reads the head once: from the source that answered last (or, while
// a contradicting sample is held, from another one), falling back through
// the others, then updates every tracker of the space.
func (s *space) probe(ctx context.Context, timeout time.Duration) {
	for _, src := range s.probeOrder() {
		start := s.clock.Now()
		pctx, cancel := context.WithTimeout(ctx, timeout)
		rvs, err := src.head(pctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return
		}
		if s.observe(src, rvs, err, start, s.clock.Now()) {
			s.mu.Lock()
			s.lastSent = maxTime(s.lastSent, start)
			s.mu.Unlock()
			return
		}
	}
}

// probeOrder returns the sources to try: the one that answered last first,
// a held sample's source last, and sources backing off after failures not
// at all this time.
func (s *space) probeOrder() []headSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	var order, held []headSource
	for i := range s.sources {
		src := s.sources[(s.good+i)%len(s.sources)]
		if b := s.backoff[src.id]; b.skip > 0 {
			b.skip--
			s.backoff[src.id] = b
			continue
		}
		if s.suspect != nil && s.suspect.source == src.id {
			held = append(held, src)
			continue
		}
		order = append(order, src)
	}
	return append(order, held...)
}

// observe records the outcome of one consistent read of src (a head probe
// or a freshness read) and reports whether it answered.
func (s *space) observe(src headSource, rvs string, err error, sent, recv time.Time) bool {
	result := catalog.ResultSuccess
	if err != nil {
		result = catalog.ResultError
	}
	s.metrics.ListDuration.WithLabelValues(src.resource, catalog.KindProbe, result).Observe(recv.Sub(sent).Seconds())
	s.mu.Lock()
	if s.backoff == nil {
		s.backoff = map[int32]backoffState{}
	}
	if err != nil {
		b := s.backoff[src.id]
		b.failures++
		b.skip = min(1<<min(b.failures-1, 4), 12) - 1
		s.backoff[src.id] = b
		s.mu.Unlock()
		s.metrics.HeadProbeErrors.WithLabelValues(src.resource, reasonOf(err)).Inc()
		if b.failures == 1 { // once per run of failures; the metric counts each
			warn(s.log, "head probe failed; retrying with backoff", "resource", src.resource, "reason", reasonOf(err), "err", err)
		} else {
			s.log.V(1).Info("head probe failed again", "resource", src.resource, "failures", b.failures, "err", err)
		}
		return false
	}
	if b, failed := s.backoff[src.id]; failed {
		s.log.Info("head probe answers again", "resource", src.resource, "failures", b.failures)
	}
	delete(s.backoff, src.id)
	if i := slices.IndexFunc(s.sources, func(x headSource) bool { return x.id == src.id }); i >= 0 {
		s.good = i
	}
	s.mu.Unlock()
	s.record(src, rvs, sent, recv)
	return true
}

// sourceOf returns the head source reading resource, if the space has one.
func (s *space) sourceOf(resource string) (headSource, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.sources, func(x headSource) bool { return x.resource == resource })
	if i < 0 {
		return headSource{}, false
	}
	return s.sources[i], true
}

// record adds a head sample of src, requested at sent and answered at recv,
// and updates the trackers.
func (s *space) record(src headSource, rvs string, sent, recv time.Time) {
	rv, ok := parseRV(rvs)
	s.mu.Lock()
	firstOpaque := !ok && !s.opaque
	s.opaque = !ok
	s.mu.Unlock()
	if !ok {
		if firstOpaque {
			s.metrics.HeadProbeErrors.WithLabelValues(src.resource, catalog.ReasonOpaqueRV).Inc()
			s.log.Info("head resource version is not an integer; lag math is off for this RV space", "resource", src.resource, "rv", rvs)
		}
		return
	}
	verdict, foreign := s.settle(src, rv, sent, recv)
	if foreign.resource != "" && s.split != nil {
		warn(s.log, "a resource answers the head probe from another etcd: it now has an RV space of its own (configure `space` for it to make this explicit)", "resource", foreign.resource)
		s.split(foreign.resource).addSource(foreign.resource, foreign.head)
	}
	switch verdict {
	case sampleIgnored:
		return
	case sampleRegressed:
		s.timeline.reset()
		warn(s.log, "head resource version went backwards (etcd restored?); history reset", "rv", rv)
		for _, t := range s.trackerList() {
			t.onRegression()
		}
	}
	s.timeline.add(sent, recv, rv, src.id)
	s.mu.Lock()
	dropped := s.timeline.droppedCount()
	delta := dropped - s.lastDropped
	s.lastDropped = dropped
	trackers := slices.Clone(s.trackers)
	s.mu.Unlock()
	for _, t := range trackers {
		if delta > 0 {
			s.metrics.TimelineDropped.WithLabelValues(t.name).Add(float64(delta))
		}
		t.onProbe(rv, sent)
	}
}

// onWrite checks every informer of the space against a write, sent at
// sent, that committed at rv (see informerState.onWrite). A write below the
// reads' head proves the history lost (the reads come from a watch cache
// that kept it); an informer above the write, while the reads agree with
// it, is only ahead of its etcd.
func (s *space) onWrite(rv uint64, sent time.Time) {
	head, recv, ok := s.timeline.latest()
	switch {
	case ok && rv < head && sent.After(recv):
		s.onHistoryLost(rv)
	case ok && rv > head && sent.After(recv):
		s.mu.Lock()
		s.lostWrite = 0 // a write above the reads: they share its history again
		s.mu.Unlock()
	}
	for _, t := range s.trackerList() {
		for _, is := range t.informerList() {
			is.onWrite(rv, sent)
		}
	}
}

// historyLost reports whether writes proved the reads to come from a
// history etcd lost: read samples then prove no informer fresh.
func (s *space) historyLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostWrite != 0
}

// onHistoryLost handles a write, at rv, that landed below what the space had
// seen: the store's history went back (etcd restored from a backup), though
// the reads (served from a watch cache) may not show it yet. One loss is
// handled once, until reads agree with the writes again.
func (s *space) onHistoryLost(rv uint64) {
	s.mu.Lock()
	if s.lostWrite != 0 {
		s.mu.Unlock()
		return
	}
	s.lostWrite = rv
	s.mu.Unlock()
	s.timeline.reset()
	warn(s.log, "a write landed below resource versions already seen: the store's history went back (etcd restored?); history reset")
	for _, t := range s.trackerList() {
		t.onHistoryLost()
	}
}

type settlement int

const (
	sampleFits      settlement = iota // add it
	sampleIgnored                     // held, or older than what the timeline knows
	sampleRegressed                   // the head went backwards: reset, then add it
)

// settle decides what a sample means for a timeline whose heads never
// decrease (see space), and names the head source found to answer from
// another etcd, if any, which it removes from the space.
func (s *space) settle(src headSource, rv uint64, sent, recv time.Time) (settlement, headSource) {
	latest, latestRecv, ok := s.timeline.latest()
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.suspect
	if held != nil {
		held.probes++
	}
	if !ok || rv >= latest {
		if held != nil && src.id != held.source {
			// another source agrees with the timeline: the held source
			// answers from another etcd
			s.suspect = nil
			return sampleFits, s.removeSourceLocked(held.source)
		}
		return sampleFits, headSource{}
	}
	if sent.Before(latestRecv) {
		return sampleIgnored, headSource{} // begun before the latest answer came: an older snapshot
	}
	if held == nil || held.source == src.id {
		if held == nil {
			s.log.Info("a head sample went backwards; holding it until another resource of the space confirms it", "resource", src.resource, "rv", rv, "latest", latest)
			s.suspect = &heldSample{source: src.id, resource: src.resource, rv: rv, sent: sent, recv: recv}
		}
		if len(s.sources) > 1 && s.suspect.probes < settleAfter {
			return sampleIgnored, headSource{}
		}
		s.suspect = nil
		return sampleRegressed, headSource{} // no other source answers: a restore
	}
	// a second source agrees on a lower head than the timeline's
	s.suspect = nil
	if high, sole := s.timeline.soleSourceAbove(rv); sole && high != src.id && high != held.source {
		if foreign := s.removeSourceLocked(high); foreign.resource != "" {
			s.timeline.truncateAbove(rv)
			return sampleFits, foreign
		}
	}
	return sampleRegressed, headSource{}
}

// removeSourceLocked removes the source with id and returns it. s.mu is held.
func (s *space) removeSourceLocked(id int32) headSource {
	i := slices.IndexFunc(s.sources, func(x headSource) bool { return x.id == id })
	if i < 0 {
		return headSource{}
	}
	src := s.sources[i]
	s.sources = slices.Delete(s.sources, i, i+1)
	s.good = 0
	return src
}

func (s *space) trackerList() []*tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.trackers)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
