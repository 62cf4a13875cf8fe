package probe

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// informerState is the sync state of one informer of a resource, fed by its
// instrumented ListerWatcher. A resource may have several informers (a
// controller-runtime cache builds one per namespace, and separate typed,
// unstructured and metadata ones): each is measured on its own, and the
// resource reports the worst.
//
// What it proves, and how:
//   - freshness: the cache at RV r held everything committed up to the
//     request time of the last head probe whose head was <= r; a consistent
//     List holds everything committed before its first page was sent; a
//     delivered canary, everything before its write;
//   - liveness: the watch delivers an event or a bookmark at least once per
//     bookmark period (~1 minute); a longer silence is a stall;
//   - lag: while the watch is live, how far behind the head its own events
//     were when delivered (so writes to other resources do not count); once
//     silent for two bookmark periods, everything between its RV and the head
//     may be missing.
type informerState struct {
	t       *tracker
	objects atomic.Int64

	mu      sync.Mutex
	synced  func() bool // the informer's HasSynced, once observed
	stopped func() bool // the informer's IsStopped, once observed
	freshen headFunc    // a consistent read on the informer's own connection, or nil

	rv       uint64    // highest RV observed; 0: unknown
	rvAt     time.Time // when it was observed
	opaque   bool      // an RV that is not an integer was seen
	fresh    time.Time // the cache provably held everything committed by then
	anyProof bool      // fresh moved since the informer last listed
	ahead    int       // consecutive probes, sent after rv arrived, whose head was below rv
	aheadW   int       // consecutive writes, sent after rv arrived, that got a lower RV than rv
	// sameHistoryAt is the request time of the latest write that landed at
	// or above the informer's RV: until then, its RV was of etcd's history.
	sameHistoryAt time.Time
	// freshAtRV is what fresh was when rv was observed: a contradiction
	// withdraws every proof rv made, back to it (or to sameHistoryAt).
	freshAtRV time.Time

	eventLag    uint64 // the largest lag of the events delivered since eventLagGen's sample
	eventLagGen uint64

	watching     bool      // a watch is open
	lastDelivery time.Time // latest event, bookmark or list end
	bookmarkRef  time.Time // latest bookmark, or the watch's start
	// preTimeout is when kube-apiserver sends the open watch's last
	// bookmark, 2s before the timeout the watch asked for; zero: none asked.
	preTimeout time.Time
	periods    [5]time.Duration
	nPeriods   int
	peaks      []proofPeak // staleness just before bookmark proofs, newest last

	listed       bool      // the first list was started (and counted)
	listing      bool      // a list cycle is under way: its retries are not new relists
	expired      bool      // the watch ended with 410: the next relist is "expired"
	attemptStart time.Time // first page of the current list attempt
	attemptRVAny bool      // that attempt may be served from a cache (RV != "")

	freshenedAt time.Time // latest freshness read sent
	freshening  bool

	deliveries *deliveries // recent deliveries by RV, while stale-read checks are on
	// storeRV is the informer store's LastStoreSyncResourceVersion, once
	// observed: deltas then count from when the store applied them, and
	// wait in queue until it has. nil: they count on receipt (no store to
	// watch, or one whose notifications the queue cannot match).
	storeRV  func() string
	queue    storeQueue
	draining bool // a kick is under way
}

// proofPeak is the staleness reached right before a bookmark proved
// freshness again: the height of a quiet resource's sawtooth.
type proofPeak struct {
	at   time.Time
	peak time.Duration
}

// Bookmark and proof cadence defaults and limits.
const (
	defaultBookmarkPeriod = time.Minute      // kube-apiserver's watch bookmark period
	proofMemory           = 30 * time.Minute // how long a sawtooth peak counts
	maxPeaks              = 16
)

func newInformerState(t *tracker) *informerState { return &informerState{t: t} }

// bookmarkPeriodLocked is the bookmark cadence: the median of the latest
// intervals between bookmarks, but never below kube-apiserver's minute. The
// API server promises a bookmark at least that often, not at most: it also
// sends early ones right after a watch-list's initial events (every second
// until the watcher has seen the RV it asked for) and one 2s before a
// watch's timeout. Shorter intervals are those extra bookmarks, not a faster
// cadence; a longer median is an API server whose cadence is slower.
func (s *informerState) bookmarkPeriodLocked() time.Duration {
	if s.nPeriods == 0 {
		return defaultBookmarkPeriod
	}
	p := slices.Clone(s.periods[:s.nPeriods])
	slices.Sort(p)
	return min(max(p[len(p)/2], defaultBookmarkPeriod), 10*time.Minute)
}

// silentLocked reports whether the watch has been silent so long that
// everything since its RV may be missing: two bookmark periods.
func (s *informerState) silentLocked(now time.Time) bool {
	return s.listed && !s.listing && !s.lastDelivery.IsZero() && now.Sub(s.lastDelivery) > 2*s.bookmarkPeriodLocked()
}

// observeEvent records a watch event (or, with isEvent false, a bookmark)
// for obj, received on the wire now. It reports whether the delta waits in
// the store queue (see storeQueue); otherwise it counted at once.
func (s *informerState) observeEvent(obj metav1.Object, now time.Time, isEvent bool) (queued bool) {
	t := s.t
	rv, ok := parseRV(obj.GetResourceVersion())
	if !ok {
		s.markOpaque()
		return false
	}
	canary := isEvent && t.isCanary(obj)
	s.mu.Lock()
	s.lastDelivery = now
	if !isEvent {
		if !s.bookmarkRef.IsZero() {
			s.periods[s.nPeriods%len(s.periods)] = now.Sub(s.bookmarkRef)
			s.nPeriods = min(s.nPeriods+1, len(s.periods))
		}
		s.bookmarkRef = now
	}
	if s.storeRV != nil {
		d := pendingDelta{at: now, rv: rv, n: 1, kind: deltaBookmark}
		if isEvent {
			d.kind, d.key, d.canary = deltaEvent, keyHash(obj.GetNamespace(), obj.GetName()), canary
		}
		s.queue.push(d)
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	s.applyEvent(rv, isEvent, canary, now)
	return false
}

// applyEvent counts a watch event (or, with isEvent false, a bookmark) at
// rv that the informer's store holds since now: it moves the informer's RV
// and freshness, and records the event's delivery lag and, for the canary
// object, its delivery.
func (s *informerState) applyEvent(rv uint64, isEvent, canary bool, now time.Time) {
	t := s.t
	sp := t.currentSpace()
	s.mu.Lock()
	if rv > s.rv {
		s.rv, s.rvAt, s.freshAtRV = rv, now, s.fresh
		s.refreshFreshLocked(sp, now, !isEvent)
	}
	if isEvent && (s.deliveries != nil || t.recordDeliveries.Load()) {
		if s.deliveries == nil {
			s.deliveries = newDeliveries(now)
		}
		s.deliveries.add(rv, now)
	}
	if isEvent {
		// how far behind the head this event was when delivered: the head
		// of the latest probe answered before now is a lower bound
		if head, _, ok := sp.timeline.latest(); ok {
			gen := sp.timeline.generation()
			if gen != s.eventLagGen {
				s.eventLag, s.eventLagGen = 0, gen
			}
			if head > rv {
				s.eventLag = max(s.eventLag, head-rv)
			}
		}
	}
	s.mu.Unlock()
	if isEvent {
		t.observeDelivery(s, sp, canary, rv, now)
	}
}

// stored is called with the object of each handler notification of the
// informer: the store has applied it, and, in order, every delta received
// before it.
func (s *informerState) stored(obj any) {
	rv, key, ok := storedIdentity(obj)
	if !ok {
		// a transform that keeps neither metadata nor a key: the queue
		// cannot tell when the store applies a delta, so deltas count on
		// receipt from now on rather than pile up unmatched
		s.mu.Lock()
		s.storeRV = nil
		s.mu.Unlock()
	}
	s.drain(rv, key, s.t.clock.Now())
}

// drain counts the queued deltas that a notification of the object at rv
// (0: unknown) with key hash key (0: none) proves the store has applied,
// and, when bookmarks or list ends wait at the head of the queue, those up
// to the store's own resource version. It may wait for the store's lock:
// call it from the informer's handler goroutine, or through kick.
func (s *informerState) drain(rv, key uint64, now time.Time) {
	var out [storeQueueCap]pendingDelta
	s.mu.Lock()
	storeRV := s.storeRV
	var k int
	if storeRV == nil {
		k = s.queue.popAll(&out)
	} else {
		k = s.queue.popApplied(rv, key, false, &out)
	}
	waiting := s.queue.n > 0 && !s.queue.ring[s.queue.head].event
	s.mu.Unlock()
	s.apply(out[:k], now)
	if storeRV == nil || !waiting {
		return
	}
	// bookmarks and list ends notify no handler: the store's RV tells
	srv, ok := parseRV(storeRV())
	s.mu.Lock()
	k = s.queue.popApplied(srv, 0, !ok, &out)
	s.mu.Unlock()
	s.apply(out[:k], now)
}

// apply counts deltas the store holds since now, oldest first.
func (s *informerState) apply(ds []pendingDelta, now time.Time) {
	for _, d := range ds {
		s.t.storeLag.Observe(max(0, now.Sub(d.at).Seconds()))
		if d.list {
			s.applyList(d.listRV, d.proof, now)
		}
		switch d.kind {
		case deltaEvent:
			s.applyEvent(d.rv, true, d.canary, now)
		case deltaBookmark:
			s.applyEvent(d.rv, false, false, now)
			if d.canary { // a batch whose canary event came before its last bookmark
				s.t.canaryCovered(s, d.rv, now)
			}
		}
	}
}

// settle counts a bookmark or list end just handed to the reflector as soon
// as the store holds it: it polls the store's resource version for a
// little while (1 ms, doubling to 128 ms), in a goroutine of its own, so a
// quiet resource's bookmark proves freshness at once rather than at the
// next second's kick.
func (s *informerState) settle() {
	if !s.startDraining() {
		return
	}
	go func() {
		defer s.stopDraining()
		for d := time.Millisecond; d <= 128*time.Millisecond; d *= 2 {
			time.Sleep(d)
			s.drain(0, 0, s.t.clock.Now())
			s.mu.Lock()
			done := s.queue.n == 0 || s.queue.ring[s.queue.head].event
			s.mu.Unlock()
			if done {
				return
			}
		}
	}()
}

// startDraining reports whether a drain goroutine may start: deltas wait
// and no other drain goroutine runs.
func (s *informerState) startDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.queue.n == 0 {
		return false
	}
	s.draining = true
	return true
}

func (s *informerState) stopDraining() {
	s.mu.Lock()
	s.draining = false
	s.mu.Unlock()
}

// kick drains, in a goroutine of its own, the deltas the store applied
// without notifying a handler (bookmarks, list ends): the store's lock may
// be held by a slow indexer, and neither a scrape nor a probe waits for it.
func (s *informerState) kick() {
	if !s.startDraining() {
		return
	}
	go func() {
		defer s.stopDraining()
		s.drain(0, 0, s.t.clock.Now())
	}()
}

// unqueueLast takes back the newest queued delta: its watch stopped before
// the reflector took it.
func (s *informerState) unqueueLast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue.dropLast()
}

// refreshFreshLocked moves fresh forward to the latest probe whose head the
// informer's RV covers; a bookmark that does so closes a sawtooth.
func (s *informerState) refreshFreshLocked(sp *space, now time.Time, bookmark bool) {
	if s.opaque || s.rv == 0 || s.aheadLocked() || sp.historyLost() {
		return
	}
	if at, ok := sp.timeline.freshAt(s.rv); ok && at.After(s.fresh) {
		s.proveLocked(at, now, bookmark)
	}
}

// proveLocked records that the cache held everything committed by at.
func (s *informerState) proveLocked(at, now time.Time, bookmark bool) {
	if !at.After(s.fresh) {
		return
	}
	if bookmark && s.anyProof {
		s.peaks = append(s.peaks, proofPeak{at: now, peak: now.Sub(s.fresh)})
		if len(s.peaks) > maxPeaks {
			s.peaks = s.peaks[1:]
		}
	}
	s.fresh, s.anyProof = at, true
}

// proofPeriodLocked is the highest sawtooth peak of the last proofMemory:
// how stale this resource's healthy, quiet cache gets before a bookmark
// proves it fresh again (etcd's progress-notify interval and the bookmark
// period decide it). 0 when only events proved freshness.
func (s *informerState) proofPeriodLocked(now time.Time) time.Duration {
	var p time.Duration
	for _, pk := range s.peaks {
		if now.Sub(pk.at) <= proofMemory {
			p = max(p, pk.peak)
		}
	}
	return p
}

// confirmFresh records that the cache provably held everything committed
// before at: a canary written then was delivered.
func (s *informerState) confirmFresh(at, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proveLocked(at, now, false)
}

func (s *informerState) markOpaque() {
	s.mu.Lock()
	first := !s.opaque
	s.opaque = true
	s.rv = 0
	s.mu.Unlock()
	if first {
		s.t.metrics.ListErrors.WithLabelValues(s.t.name, catalog.ReasonOpaqueRV).Inc()
	}
}

// aheadAfter is how many consecutive probes must contradict the informer's
// RV before it counts as ahead of its space's head.
const aheadAfter = 2

// onProbe updates freshness after the space's head probe, sent at sent, saw
// head.
func (s *informerState) onProbe(sp *space, head uint64, sent, now time.Time) {
	s.kick()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opaque || s.rv == 0 {
		return
	}
	switch {
	case s.rv > head && s.rvAt.Before(sent):
		// a probe sent after the informer saw rv must see a head >= rv in
		// one etcd: this RV belongs to another history, and proves nothing
		s.ahead++
		s.withdrawLocked()
		return
	case s.rv <= head:
		s.ahead = 0
	}
	s.refreshFreshLocked(sp, now, false)
}

// withdrawLocked takes back every proof the informer's current RV made: it
// turned out to be of another history than its etcd's.
func (s *informerState) withdrawLocked() {
	to := s.freshAtRV
	if s.sameHistoryAt.After(to) {
		to = s.sameHistoryAt
	}
	if to.Before(s.fresh) {
		s.fresh = to
	}
}

// aheadLocked reports whether the informer's RV belongs to another history
// than its space's: probes or writes sent after it arrived saw lower heads.
func (s *informerState) aheadLocked() bool { return max(s.ahead, s.aheadW) >= aheadAfter }

// onWrite checks the informer's RV against a write to the space's etcd,
// sent at sent, that got RV rv. A write is the authoritative head: it
// commits after it is sent, so every RV observed before then is below rv in
// one history. Reads can be served from an API server's watch cache that
// still holds a history etcd lost (restored from a backup while
// kube-apiserver ran on); a write cannot. Only a write that catches up with
// the informer's RV clears what writes found.
func (s *informerState) onWrite(rv uint64, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opaque || s.rv == 0 {
		return
	}
	switch {
	case s.rv > rv && s.rvAt.Before(sent):
		s.aheadW++
		s.withdrawLocked()
	case s.rv <= rv:
		s.aheadW = 0
		s.sameHistoryAt = maxTime(s.sameHistoryAt, sent)
	}
}

// onHistoryLost handles a write that proved the store's history went back:
// freshness proven since the last write that shared the informer's history
// may rest on a history etcd no longer has (reads served from a stale watch
// cache prove nothing), so it is withdrawn.
func (s *informerState) onHistoryLost() {
	s.onRegression()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sameHistoryAt.IsZero() && s.sameHistoryAt.Before(s.fresh) {
		s.fresh = s.sameHistoryAt
	}
}

// onRegression forgets the RV of a history the store no longer has: it
// proves nothing until the informer lists again; staleness keeps growing
// from the last time freshness was proven.
func (s *informerState) onRegression() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv, s.ahead, s.aheadW, s.eventLag = 0, 0, 0, 0
	if s.deliveries != nil {
		s.deliveries.reset()
	}
}

// startList is called with the first page of a List, or a watch-list.
// Attempts within one list cycle (retries after 429, a 410 retried at RV
// "", a watch-list falling back to List) are one relist; the cycle ends
// when a list completes.
func (s *informerState) startList(now time.Time, rvAny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attemptStart, s.attemptRVAny = now, rvAny
	if s.listing {
		return
	}
	s.listing = true
	reason := catalog.RelistInitial
	switch {
	case !s.listed:
		s.listed = true
	case s.expired:
		reason = catalog.RelistExpired
	default:
		reason = catalog.RelistError
	}
	s.expired = false
	s.t.metrics.Relists.WithLabelValues(s.t.name, reason).Inc()
}

// endList is called when a List's last page or a watch-list's
// initial-events-end bookmark arrives with the list's RV; the list counts
// once the store holds it (see applyList). It reports whether the list end
// waits in the store queue.
func (s *informerState) endList(rvs string, now time.Time) (queued bool) {
	rv, ok := parseRV(rvs)
	if !ok {
		s.markOpaque()
		s.mu.Lock()
		s.listing = false
		s.mu.Unlock()
		return false
	}
	s.mu.Lock()
	s.listing, s.lastDelivery, s.bookmarkRef = false, now, now
	var proof time.Time
	if !s.attemptRVAny {
		// a consistent read (RV "") holds everything committed before it began
		proof = s.attemptStart
	}
	if s.storeRV != nil && !s.opaque {
		s.queue.push(pendingDelta{at: now, proof: proof, rv: rv, n: 1, kind: deltaList})
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	s.applyList(rv, proof, now)
	return false
}

// applyList counts a list at rv that the store holds since now; proof,
// when not zero, is when the list, a consistent read, began.
func (s *informerState) applyList(rv uint64, proof, now time.Time) {
	t := s.t
	sp := t.currentSpace()
	s.mu.Lock()
	if s.opaque {
		s.mu.Unlock()
		return
	}
	if rv < s.rv {
		t.regressions.Inc()
	}
	// the sawtooth's height is the API server's cadence, not the list's:
	// its peaks survive a relist
	s.rv, s.rvAt, s.ahead, s.aheadW, s.anyProof, s.freshAtRV = rv, now, 0, 0, false, s.fresh
	if !proof.IsZero() {
		s.proveLocked(proof, now, false)
	}
	s.refreshFreshLocked(sp, now, false)
	s.mu.Unlock()
	t.canaryCovered(s, rv, now)
}

// failList records a List page or watch-list that failed.
func (s *informerState) failList(err error) {
	s.t.metrics.ListErrors.WithLabelValues(s.t.name, reasonOf(err)).Inc()
}

// watchStarted is called when a watch (not a watch-list) opened; deadline
// is when its timeout ends it (zero: none).
func (s *informerState) watchStarted(now, deadline time.Time) {
	s.t.watchStarts.Inc()
	s.watchOpened(now, deadline)
}

// watchOpened is called when a watch, or a watch-list past its initial
// events, streams: bookmarks are due from now on, and one just before
// deadline (zero: no timeout asked).
func (s *informerState) watchOpened(now, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watching, s.bookmarkRef, s.preTimeout = true, now, time.Time{}
	if !deadline.IsZero() {
		s.preTimeout = deadline.Add(-preTimeoutBookmarkLead)
	}
}

// preTimeoutBookmarkLead is how long before a watch's timeout kube-apiserver
// sends it a last bookmark (k8s.io/apiserver's cacheWatcher.nextBookmarkTime).
const preTimeoutBookmarkLead = 2 * time.Second

// watchEnded is called when a watch's stream ends.
func (s *informerState) watchEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watching = false
}

// failWatch records a watch call that failed or an error event in a watch.
func (s *informerState) failWatch(err error) {
	reason := reasonOf(err)
	if reason == catalog.ReasonExpired {
		s.mu.Lock()
		if !s.listing {
			s.expired = true
		}
		s.mu.Unlock()
	}
	s.t.metrics.WatchErrors.WithLabelValues(s.t.name, reason).Inc()
}

// due reports whether a freshness read would make the next bookmark prove
// freshness: a watch is open and live, a bookmark is due within lead (the
// next of the cadence, or the one before the watch's timeout), no read since
// the latest bookmark, and nothing else proved freshness lately.
func (s *informerState) due(now time.Time, lead time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.freshen == nil || s.freshening || !s.watching || s.listing || s.opaque || s.rv == 0:
		return false
	case s.synced != nil && !s.synced():
		return false
	case s.freshenedAt.After(s.bookmarkRef):
		return false
	case now.Sub(s.fresh) < 2*lead:
		return false // events keep it fresh
	}
	next := s.bookmarkRef.Add(s.bookmarkPeriodLocked())
	if !s.preTimeout.IsZero() && s.preTimeout.Before(next) && !s.preTimeout.Before(s.bookmarkRef) {
		next = s.preTimeout
	}
	return !now.Before(next.Add(-lead))
}

// informerSnapshot is what one informer reports at a scrape.
type informerSnapshot struct {
	synced                  bool
	objects                 int
	rv                      uint64
	rvKnown, opaque, ahead  bool
	lag                     uint64
	lagKnown                bool
	staleness               time.Duration
	stalenessKnown          bool
	silence, bookmarkPeriod time.Duration
	silenceKnown            bool
	proofPeriod             time.Duration
	proofKnown, headUnknown bool
	stopped                 bool
	queueDepth              int           // deltas received on the wire, not yet in the store
	queueOldest             time.Duration // how long the oldest of them has waited
}

func (s *informerState) snapshot(sp *space, now time.Time) informerSnapshot {
	s.kick()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := informerSnapshot{objects: int(s.objects.Load()), opaque: s.opaque, bookmarkPeriod: s.bookmarkPeriodLocked()}
	out.queueDepth = s.queue.depth
	if at, ok := s.queue.oldest(); ok {
		out.queueOldest = max(0, now.Sub(at))
	}
	if s.synced != nil {
		out.synced = s.synced()
	}
	if s.stopped != nil {
		out.stopped = s.stopped()
	}
	if out.synced && !s.lastDelivery.IsZero() {
		out.silence, out.silenceKnown = now.Sub(s.lastDelivery), true
	}
	if s.opaque {
		return out
	}
	out.rv, out.rvKnown = s.rv, s.rv != 0
	out.ahead = s.aheadLocked()
	if !sp.hasSources() {
		return out
	}
	if age, probed := sp.headAge(now); !probed || age > sp.headUnknownAfter() {
		out.headUnknown = true // not yet, or no longer, answered
		return out
	}
	if out.ahead || s.rv == 0 {
		// staleness grows from the last proof; lag is unknown
		if !s.fresh.IsZero() {
			out.staleness, out.stalenessKnown = now.Sub(s.fresh), true
		}
		return out
	}
	head, _, _ := sp.timeline.latest()
	switch {
	case s.silentLocked(now):
		out.lag = 0
		if head > s.rv {
			out.lag = head - s.rv
		}
	case sp.timeline.generation()-s.eventLagGen <= 1:
		out.lag = s.eventLag
	}
	out.lagKnown = true
	if !s.fresh.IsZero() {
		out.staleness, out.stalenessKnown = now.Sub(s.fresh), true
	}
	if s.anyProof {
		out.proofPeriod, out.proofKnown = s.proofPeriodLocked(now), true
	}
	return out
}
