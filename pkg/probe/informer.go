package probe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// informer is one informer of a resource, measured along the one way a
// delta takes from the wire to a scrape:
//
//  1. the wire (wire, under wireMu): what its instrumented ListerWatcher
//     received — lists and relists, watch sessions, signs of life, the
//     bookmark cadence — and each delta, which it hands to
//  2. the queue (queue, under queueMu): deltas wait there until the store
//     provably applied them; drain (applied.go) pops them, in order, and
//     hands them to
//  3. the proofs (proof, under proofMu): what the store provably holds —
//     its RV, freshness, lag — and the observations of each delta applied
//     (store lag, delivery lag, canary delivery).
//
// Each stage owns its state and its lock and calls only the next one; a
// stage reads the state of earlier stages and of its resource's space, and
// writes none of it. A scrape reads every stage and changes nothing. Locks
// are taken in stage order, later stages first (proofMu, wireMu, queueMu),
// and the space's last; no stage holds its lock while it calls the next.
type informer struct {
	res     *resource
	objects atomic.Int64

	// hooks are set once the informer is built, before it starts, while
	// a scrape may already read them (the informer is listed from
	// newInformer on): nil until then.
	hooks atomic.Pointer[informerHooks]
	// pooled: an answer on the informer's own connection came over
	// HTTP/1.1, where each request may take another connection of a pool,
	// which a load balancer may have placed on another API server than
	// the watch's: its reads are then not its own (readsOwn)
	pooled atomic.Bool
	// seesCanary: the informer's scope holds the canary object (a list
	// held it, or it delivered a canary event; the exporter's own
	// informers watch every namespace). Only then is a canary write it has
	// not delivered a sign that its store is behind: one of a namespace
	// or a selector that leaves the canary out never delivers it.
	seesCanary atomic.Bool

	wireMu      sync.Mutex
	wire        proof.Watch
	opaque      bool // an RV that is not an integer was seen
	freshenedAt time.Time
	freshening  bool

	queueMu  sync.Mutex
	queue    proof.Queue
	counted  bool // deltas count on receipt (no store to watch, or one whose notifications the queue cannot match)
	draining atomic.Bool
	// polled: when drain last read the store's RV with deltas waiting for
	// it; those it left were not in the store then (see drain)
	polled time.Time

	proofMu    sync.Mutex
	proof      proof.Proof
	deliveries *deliveries // when each object's version reached the store, while stale-read checks are on
}

func newInformer(r *resource) *informer {
	in := &informer{res: r}
	in.wire.SetReads(false) // until freshenWith gives it reads on its own connection
	return in
}

// informerHooks are what the monitor asks of an informer itself, and its
// freshness read.
type informerHooks struct {
	synced  func() bool   // the informer's HasSynced
	stopped func() bool   // its IsStopped
	storeRV func() string // its store's LastStoreSyncResourceVersion; nil: deltas count on receipt
	// freshen is a consistent read of the resource (nil: none): on the
	// informer's own connection when ownReads, else on one whose API
	// server the monitor cannot tell (an instrumented informer's own,
	// through its ListerWatcher, whose protocol it cannot see).
	freshen  headFunc
	ownReads bool
}

// syncedOrUnknown reports whether the informer has synced, true before
// its hooks are set.
func (in *informer) syncedOrUnknown() bool {
	synced := in.hook().synced
	return synced == nil || synced()
}

// hook returns the informer's hooks, zero before they are set.
func (in *informer) hook() informerHooks {
	if h := in.hooks.Load(); h != nil {
		return *h
	}
	return informerHooks{}
}

// setHook changes the informer's hooks, as the goroutine that builds it
// sets them one by one (the only writer).
func (in *informer) setHook(set func(*informerHooks)) {
	h := in.hook()
	set(&h)
	in.hooks.Store(&h)
}

// attach connects the informer's state to inf before it starts: it counts
// the cached objects, drains the queue with each notification, reports
// inf's sync state and whether it stopped, and logs its list/watch errors.
func (in *informer) attach(inf cache.SharedIndexInformer, log logr.Logger) {
	in.setHook(func(h *informerHooks) {
		h.synced, h.stopped, h.storeRV = inf.HasSynced, inf.IsStopped, inf.GetStore().LastStoreSyncResourceVersion
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { in.objects.Add(1); in.notified(obj) },
		UpdateFunc: func(_, obj any) { in.notified(obj) },
		DeleteFunc: func(obj any) { in.objects.Add(-1); in.notified(obj) },
	})
	log = log.WithValues("resource", in.res.name)
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Error(err, "list/watch failed; the informer retries with backoff")
	})
}

// ---- stage 1: the wire ----

// listStarted records the first page of a List, or a watch-list;
// consistent when it reads at RV "".
func (in *informer) listStarted(now time.Time, consistent bool) {
	in.wireMu.Lock()
	reason := in.wire.ListStarted(now, consistent)
	in.wireMu.Unlock()
	if reason != "" {
		in.res.metrics.Relists.WithLabelValues(in.res.name, reason).Inc()
	}
}

// listFailed records a List page or watch-list that failed.
func (in *informer) listFailed(err error) {
	reason := reasonOf(err)
	in.wireMu.Lock()
	// a resource the API server does not serve (a CRD deleted), or forbids
	// listing, leaves nothing to watch
	in.wire.ListFailed(reason == catalog.ReasonNotFound || reason == catalog.ReasonForbidden)
	in.wireMu.Unlock()
	in.res.metrics.ListErrors.WithLabelValues(in.res.name, reason).Inc()
}

// listEnded records a List's last page or a watch-list's initial-events-
// end bookmark, received at now with the list's RV. It reports whether the
// list end waits in the queue until the store holds it.
func (in *informer) listEnded(rvs string, now time.Time) (queued bool) {
	in.wireMu.Lock()
	began, consistent := in.wire.ListEnded(now)
	incident := in.wire.IncidentAt()
	in.wireMu.Unlock()
	in.res.noteIncident(incident)
	rv, ok := proof.ParseRV(rvs)
	if !ok {
		in.markOpaque()
		return false
	}
	return in.push(proof.Delta{At: now, RV: rv, Kind: proof.ListEnd, Began: began, Consistent: consistent})
}

// watchStarted records that a watch (not a watch-list) opened from rv (as
// sent; "": unknown); deadline is when its timeout ends it (zero: none).
func (in *informer) watchStarted(now, deadline time.Time, rv string) {
	in.res.watchStarts.Inc()
	in.watchOpened(now, deadline, rv)
}

// watchOpened records that a watch, or a watch-list past its initial
// events, streams from rv.
func (in *informer) watchOpened(now, deadline time.Time, rv string) {
	start, _ := proof.ParseRV(rv)
	in.wireMu.Lock()
	in.wire.WatchOpened(now, deadline, start)
	incident := in.wire.IncidentAt()
	in.wireMu.Unlock()
	in.res.noteIncident(incident)
}

// watchEnded records that a watch's stream ended.
func (in *informer) watchEnded(now time.Time) {
	in.wireMu.Lock()
	in.wire.WatchEnded(now)
	incident := in.wire.IncidentAt()
	in.wireMu.Unlock()
	in.res.noteIncident(incident)
}

// watchFailed records a watch call that failed or an error event in a watch.
func (in *informer) watchFailed(err error) {
	reason := reasonOf(err)
	in.wireMu.Lock()
	in.wire.WatchError(reason == catalog.ReasonExpired)
	in.wireMu.Unlock()
	in.res.metrics.WatchErrors.WithLabelValues(in.res.name, reason).Inc()
}

// received records a watch event of type typ (a bookmark too) of obj,
// received on the wire at now. It reports whether the delta waits in the
// queue until the store holds it.
func (in *informer) received(obj metav1.Object, now time.Time, typ watch.EventType) (queued bool) {
	event := typ != watch.Bookmark
	rv, ok := proof.ParseRV(obj.GetResourceVersion())
	in.wireMu.Lock()
	in.wire.Received(now, !event)
	if ok && !event {
		in.wire.BookmarkRV(rv, now)
	}
	incident := in.wire.IncidentAt()
	in.wireMu.Unlock()
	in.res.noteIncident(incident)
	if !ok {
		in.markOpaque()
		return false
	}
	d := proof.Delta{At: now, RV: rv, Kind: proof.Bookmark, Deleted: typ == watch.Deleted}
	switch k, digested := obj.(*keyObject); {
	case !event:
	case digested: // digested on the wire, once (metaLW)
		d.Kind, d.Key, d.Canary, d.Stamp = proof.Event, k.digest.hash(), k.canary, k.stamp
	default:
		d.Kind, d.Key, d.Canary = proof.Event, keyHash(obj.GetNamespace(), obj.GetName()), in.res.isCanary(obj.GetNamespace(), obj.GetName())
		if d.Canary {
			d.Stamp = heartbeatOf(obj.GetAnnotations()[heartbeatAnnotation])
		}
	}
	if d.Canary && !in.seesCanary.Load() {
		in.seesCanary.Store(true)
	}
	return in.push(d)
}

func (in *informer) markOpaque() {
	in.wireMu.Lock()
	in.opaque = true
	in.wireMu.Unlock()
	in.proofMu.Lock()
	first := in.proof.MarkOpaque()
	in.proofMu.Unlock()
	if first {
		in.res.metrics.ListErrors.WithLabelValues(in.res.name, catalog.ReasonOpaqueRV).Inc()
	}
}

// ---- stage 2: the queue ----

// push hands a delta to the queue, or straight to the proofs when deltas
// count on receipt. It runs on the reflector's goroutine, so it never
// reads the store (whose lock a slow indexer holds: the wire would stall
// behind it); what the store applied without telling a handler is drained
// beside it (drainStore: the monitor's ticker, and every scrape).
func (in *informer) push(d proof.Delta) (queued bool) {
	in.queueMu.Lock()
	in.queue.Push(d)
	if in.hook().storeRV != nil && !in.counted {
		in.queueMu.Unlock()
		return true
	}
	var buf [proof.QueueCap]proof.Applied
	out := in.queue.PopAll(buf[:0])
	in.queueMu.Unlock()
	in.apply(out, d.At, nil)
	return false
}

// unqueueLast takes back the newest delta: its watch stopped before the
// reflector took it.
func (in *informer) unqueueLast() {
	in.queueMu.Lock()
	defer in.queueMu.Unlock()
	in.queue.DropLast()
}

// freshenDue reports whether a freshness read would make the next bookmark
// prove freshness, and if so marks one under way: a watch is open and live
// with bookmarks, one is due within lead (the next of the cadence, or the
// one before the watch's timeout), no read since the latest bookmark (or
// none for a cadence). A busy resource is read too: events that stop just
// before a bookmark leave only the read to show that its RV is behind. So
// is a store whose RV the proofs dropped (its resource moved to an RV
// space of its own, or its etcd was restored): on a quiet resource the
// read is what moves its watch's cache, and the bookmark after it gives
// the proofs an RV again (simulation corpus seed 351362).
func (in *informer) freshenDue(now time.Time, lead time.Duration) bool {
	if in.hook().freshen == nil {
		return false
	}
	in.wireMu.Lock()
	defer in.wireMu.Unlock()
	next, ok := in.wire.NextBookmark()
	switch {
	case !ok || in.freshening || in.wire.Listing() || in.opaque:
		return false
	case !in.syncedOrUnknown():
		return false
	case in.freshenedAt.After(in.wire.LastBookmark()) && now.Sub(in.freshenedAt) < in.wire.Period():
		// one read per bookmark; one with no bookmark after it (it failed,
		// or the cache did not move) is tried again a period later: with
		// etcd sending no progress notifications only a read moves a quiet
		// cache, and the bookmark waits for it
		return false
	case now.Before(next.Add(-lead)):
		return false
	}
	in.freshening, in.freshenedAt = true, now
	return true
}

// readsOwn reports whether its freshness reads reach the API server that
// holds its watch: they ride its own connection, and that is one (HTTP/2),
// not a pool (HTTP/1.1).
func (in *informer) readsOwn() bool { return in.hook().ownReads && !in.pooled.Load() }

// observeProto learns the HTTP major version of an answer on the
// informer's own connection: once one is HTTP/1.1, its reads are not its
// own (a read may reach another API server than its watch, so a bookmark
// below the read's head proves nothing of the watch's cache) and the
// proofs no longer count on them. It does not go back.
func (in *informer) observeProto(major int) {
	if major != 1 || !in.pooled.CompareAndSwap(false, true) {
		return
	}
	in.wireMu.Lock()
	in.wire.SetReads(false)
	in.wireMu.Unlock()
}

// freshened records that the freshness read marked by freshenDue, sent at
// sent, ended: answered at recv, with head when integer, or not answered.
func (in *informer) freshened(head uint64, sent, recv time.Time, answered, integer bool) {
	own := in.readsOwn()
	in.wireMu.Lock()
	in.freshening = false
	if own {
		in.wire.ReadEnded(answered)
		if answered && integer {
			in.wire.ReadAnswered(head, recv)
		}
	}
	in.wireMu.Unlock()
	if !answered {
		in.res.noteIncident(sent)
	}
	in.proofMu.Lock()
	defer in.proofMu.Unlock()
	if !own {
		if !answered {
			// a sawtooth across it is an incident's, not the healthy
			// height the proof period learns
			in.proof.ReadFailed(sent)
		}
		return
	}
	switch {
	case answered && integer:
		in.proof.Read(head, recv)
	case !answered:
		in.proof.ReadFailed(sent)
	}
}

// heldRV returns the RV its store holds (0: none yet, or not an integer).
func (in *informer) heldRV() uint64 {
	in.proofMu.Lock()
	defer in.proofMu.Unlock()
	return in.proof.RV()
}

// snapshot returns what the informer reports at now. It changes nothing.
func (in *informer) snapshot(sp *space, now time.Time) informerValues {
	v := informerValues{objects: int(in.objects.Load()), state: catalog.StateOK}
	h := in.hook()
	if h.synced != nil {
		v.synced = h.synced()
	}
	if h.stopped != nil {
		v.stopped = h.stopped()
	}
	in.proofMu.Lock()
	defer in.proofMu.Unlock()
	in.wireMu.Lock()
	defer in.wireMu.Unlock()
	in.queueMu.Lock()
	v.queueDepth = in.queue.Depth()
	if at, ok := in.queue.Oldest(); ok {
		v.queueOldest = max(0, now.Sub(at))
	}
	in.queueMu.Unlock()
	v.cadence = in.wire.Cadence(now)
	if v.synced {
		v.silence, v.silenceKnown = in.wire.Silence(now)
	}
	switch {
	case in.wire.Unserved():
		v.state = catalog.StateUnserved
		return v
	case in.opaque || in.proof.Opaque():
		v.state = catalog.StateOpaqueRV
		return v
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	env := in.env(sp, now)
	if c := in.res.canary.Load(); c != nil && in.seesCanary.Load() {
		env.Overdue = c.overdue(in, now, overdueAfter)
	}
	var unmet func(time.Time) bool
	if in.wire.Bookmarks() {
		unmet = func(at time.Time) bool { return in.wire.Unmet(at, now) }
	}
	env.Overdue = max(env.Overdue, in.res.owing.overdue(in, in.proof.RV(), now, unmet))
	pv := in.proof.Snapshot(env)
	v.rv, v.rvKnown = pv.RV, pv.RVKnown
	if pv.Ahead {
		v.state = catalog.StateAheadOfHead
	}
	if len(sp.core.Sources()) == 0 && sp.core.Reference() < 0 {
		return v // no head probe: lag and staleness are not computed
	}
	canary := in.res.canary.Load()
	headKnown := true
	if age, ok := sp.core.HeadAge(now); !ok || age > sp.core.UnknownAfter() {
		if v.state == catalog.StateOK {
			v.state = catalog.StateHeadUnknown // not yet, or no longer, answered
		}
		if !ok || canary == nil || !canary.heads(now) {
			// no head to measure by, but a store that lacks a change
			// answered or delivered elsewhere over overdueAfter ago is
			// stale whatever the head, and its last proof bounds that
			// (the head probe's server and the store's cut off etcd, no
			// canary, a sibling delivering through another)
			if ok && env.Overdue != 0 && !pv.Ahead && !pv.Fresh.IsZero() && !in.wire.Bookmarkless() {
				v.staleness, v.stalenessKnown, v.staleProven = now.Sub(pv.Fresh), true, true
			}
			return v
		}
		// the head was read, and no longer answers: the canary's writes,
		// while they answer, are heads of its resource (a store that
		// reaches one was fresh when it was sent, one behind them stays
		// stale), so a store cut off with the head's server still shows
		// (no lag: that needs the space's head). Not before the head was
		// read: a monitor whose Start never runs proves a quiet store only
		// once per bookmark and canary interval, a sawtooth above the
		// healthy bound
		headKnown = false
	}
	if canary != nil && !pv.Ahead {
		// a write answered after this informer delivered it proves it fresh
		// before the informer applies anything else
		if sent := canary.proof(in); sent.After(pv.Fresh) {
			pv.Fresh, pv.FreshKnown, pv.Blind = sent, true, false
		}
	}
	if pv.Blind {
		// a quiet store's freshness read is its head: unknown while it
		// fails, unless the store lacks a change answered or delivered
		// elsewhere over overdueAfter ago (env.Overdue): then it is stale
		// whatever its reads say, and its last proof bounds that
		if v.state == catalog.StateOK {
			v.state = catalog.StateHeadUnknown
		}
		if env.Overdue == 0 {
			return v
		}
		pv.FreshKnown = !pv.Fresh.IsZero()
		v.staleProven = true
	}
	if headKnown {
		v.lag, v.lagKnown = pv.Lag, pv.LagKnown
	}
	if in.wire.Bookmarkless() {
		// nothing proves a quiet cache fresh between events: staleness
		// would grow for as long as nobody writes, and burn the SLO
		if v.state == catalog.StateOK {
			v.state = catalog.StateNoBookmarks
		}
		return v
	}
	if pv.FreshKnown {
		v.staleness, v.stalenessKnown = now.Sub(pv.Fresh), true
	}
	v.proofPeriod, v.proofKnown = pv.ProofPeriod, pv.ProofPeriodKnown
	return v
}
