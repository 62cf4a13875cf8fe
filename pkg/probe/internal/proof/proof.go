package proof

import "time"

// Proof is what one informer's store provably holds, updated as its
// deltas are applied to the store (never on receipt: a delta that waits
// in the informer's queue is not in the store yet).
//
// What it proves, and how:
//   - freshness: the store at RV r held everything committed up to the
//     request time of the latest head sample whose head was <= r; a
//     consistent list holds everything committed before its first page
//     was sent; a delivered canary, everything before its write;
//   - the freshness proof period: how stale a healthy quiet store gets
//     before a bookmark proves it fresh again (the height of its staleness
//     sawtooth); an incident (a silent watch, an unknown head) is not a
//     healthy sawtooth and teaches it nothing;
//   - RV lag: how far behind the head its latest delivery was (an event's
//     distance from the head when it was applied, or a bookmark's distance
//     from a consistent read the informer made on its own connection
//     more than DispatchSlack before: the watch cache behind that
//     connection did not catch up),
//     until a later delivery or proof shows the store caught up; once the
//     watch is silent longer than its cadence allows, everything between
//     its RV and the head may be missing.
//
// An RV proves nothing once it turns out to be of another history than its
// space's (a head or a write after it saw a lower revision) or of an
// earlier epoch (the space was restored): what it proved is withdrawn. And
// after a restore, a store that has not listed since may still hold
// objects of the lost history (a watch cache that kept the lost history
// and later resumed past etcd's revision delivers the new history on top of
// it): it proves nothing until it lists again. So does a store that moved
// on from an RV found to be of another history, restore counted or not
// (the head probe may have missed every write the restore lost).
type Proof struct {
	rv    uint64
	rvAt  time.Time
	epoch uint64
	// list is the store's standing by its latest list (see standing);
	// listEpoch is the space's epoch at its latest list outside a loss,
	// lossEpoch at its latest list
	list      standing
	listEpoch uint64
	lossEpoch uint64
	// tainted: the store moved on from an RV found to be of another history
	// than its space's (reads or writes requested after it saw lower
	// revisions): it holds objects of that history until it lists again,
	// however well its later deliveries follow the head (a watch from an
	// RV of a lost history that etcd's new history passed delivers on top
	// of them). Not carried to another space: an RV of another etcd is
	// of another history too, and its store holds that etcd's objects.
	tainted   bool
	listAt    time.Time // when the latest list completed
	listRV    uint64
	opaque    bool
	fresh     time.Time // the store provably held everything committed by then
	freshSeen time.Time // when fresh was learned
	freshAtRV time.Time // fresh when rv was observed
	anyProof  bool      // fresh moved since the informer last listed
	peaks     []peak
	// held: the bookmark being applied was held on the way (a slow or
	// frozen connection); heldFresh: so was the one that proved fresh. A
	// sawtooth either closes or opens grew by the hold, the path's
	// incident and not the server's cadence
	held, heldFresh bool

	lag      uint64
	lagAt    time.Time
	lagHead  time.Time // when the head sample lag was measured against was taken
	lagBasis lagBasis  // what lag rests on
	// bookmarked: when the store last applied a bookmark
	bookmarked time.Time

	read *read // the latest consistent read on the informer's own connection, not yet judged
	// readFailed: when the latest read was sent, if it did not answer
	readFailed time.Time
}

// standing is what the store's latest list makes of what it holds,
// against its space's history: the proof core's history states.
//
//	any ─ApplyList─▶ listed (no loss under way)
//	                ▶ listedInLoss (writes land below the reads)
//	                ▶ mustList (writes land below the reads, and the list is
//	                  at the head the lost history's reads stood at: Space.ListedLost)
//	listed, listedInLoss ─writes prove a restore the store did not list
//	    since, landing below its list (sync), or its resource moves to
//	    another space unlisted since a restore (Reset)─▶ mustList
//
// A store whose standing is listedInLoss counts as listed once the loss
// ends with no write after its list landing below its RV
// (unlistedSinceRestore); one such write makes it mustList (its list is
// of the epoch before the restore) or its RV ahead (contradicted). One
// that moved on from an RV of another history is tainted besides,
// whatever its standing (Proof.tainted).
type standing uint8

const (
	// unlisted: no list applied yet
	unlisted standing = iota
	// listed: the latest list completed with no loss under way, in the
	// space's epoch listEpoch
	listed
	// listedInLoss: the latest list completed while writes landed below
	// the reads, in the space's epoch lossEpoch: it may come from a watch
	// cache of the lost history, and counts once the loss ends
	listedInLoss
	// mustList: the store may hold objects of a lost history (writes
	// proved a restore it did not list since, or its resource moved to
	// another RV space before it listed after one)
	mustList
)

var standingNames = [...]string{"unlisted", "listed", "listedInLoss", "mustList"}

func (s standing) String() string { return standingNames[s] }

// lagBasis is what the store's RV lag rests on: the proof core's lag
// states.
//
//	any ─ApplyEvent, a prompt proof (settleLag), a list of a watch cache
//	    at or above the head, a read the watch cache reached─▶ lagMeasured
//	any ─ApplyList of a watch cache below the head that no read of the
//	    informer's own moves─▶ lagUnsure
//	any ─a bookmark DispatchSlack after a consistent read on the same
//	    connection, below the read's head─▶ lagBehind
//	lagBehind ─a bookmark at or above the read's head─▶ lagMeasured
//	any ─a restore (sync)─▶ lagMeasured, lag 0
//
// ApplyEvent measures anew against a newer head sample; against the same
// one it keeps the larger lag, and an unsure basis.
type lagBasis uint8

const (
	// lagMeasured: lag is how far behind the head the latest delivery
	// was (0 when a prompt proof since showed the store caught up)
	lagMeasured lagBasis = iota
	// lagUnsure: lag came from a list of a watch cache below the head,
	// which no read of the informer's own moves: a quiet resource's cache
	// trails the writes elsewhere as a stuck one does, so the lag is
	// unknown until a delivery measures it or a prompt proof settles it
	lagUnsure
	// lagBehind: the latest bookmark came from a watch cache that did
	// not catch up with a consistent read on the same connection: no
	// proof settles it, only a delivery or a bookmark at the read's head
	lagBehind
)

var lagBasisNames = [...]string{"lagMeasured", "lagUnsure", "lagBehind"}

func (b lagBasis) String() string { return lagBasisNames[b] }

type peak struct {
	at   time.Time
	peak time.Duration
}

type read struct {
	head uint64
	recv time.Time
}

// Env is what an informer's proofs read of its surroundings at an instant.
type Env struct {
	Now   time.Time
	Space *Space
	Watch *Watch
	// ProbeInterval is the head probe's.
	ProbeInterval time.Duration
	// Unsettled: the informer's resource reads the space's head, but the
	// reference has not confirmed its etcd as the space's yet: the head
	// may be another etcd's (a resource on an etcd of its own, listed
	// beside the reference; in a still world, for good).
	Unsettled bool
	// OwnReads: freshness reads run on the informer's own connection, so
	// they reach the API server whose watch cache feeds it; false when
	// they are off or ride another connection.
	OwnReads bool
	// Incident is when an informer of the resource last had an incident
	// on its path (its watch silent past its cadence or broken, or a
	// freshness read unanswered, sent then; zero: none): the watch cache
	// its reads move may be this informer's too, and a sawtooth across it,
	// stretched for want of them, is an incident's, not the healthy
	// height (corpus seed 311728: an operator's informer whose own path
	// was healthy learned the sawtooth the exporter's frozen reads
	// stretched).
	Incident time.Time
	// Overdue, when not 0, is the RV of a write to the informer's resource
	// that it should have delivered by now and has not (the canary's, or
	// a change a sibling informer delivered of an object it holds): its
	// store is behind at least that write.
	Overdue uint64
}

// Proof cadence limits.
const (
	// FreshenLead is how long before a quiet informer's next bookmark its
	// freshness read is sent.
	FreshenLead = 8 * time.Second
	// FreshenTimeout is how long a freshness read may take. A consistent
	// read of a watch cache that does not catch up waits 3s before
	// kube-apiserver serves it from etcd; on a slow connection it answers
	// after the bookmark it was meant for, and still shows whether the
	// next delivery reached its head.
	FreshenTimeout = 30 * time.Second
	// proofMemory is how long a healthy sawtooth's peak counts toward a
	// learned proof period: etcd's progress notifications (every 10
	// minutes by default) decide a quiet cache's sawtooth without
	// freshness reads, so it holds three of theirs.
	proofMemory = 30 * time.Minute
	// maxPeaks is how many peaks are kept: a memory bound, 16 minutes of
	// one-minute bookmarks.
	maxPeaks = 16
	// DispatchSlack is how long after a consistent read answers a bookmark
	// below its head may still come from a watch cache that caught up:
	// kube-apiserver's cacher sends bookmarks at the revision its
	// dispatcher last processed, which trails the revision a consistent
	// read waits for by what is queued between them (a bookmark timer
	// that fires as the read wakes sends the older one).
	DispatchSlack = 2 * time.Second
	// AheadAfter is how many samples (or writes) after an RV arrived must
	// contradict it before it is of another history.
	AheadAfter = 2
	// recentProofSlack is how much later than the freshness read's lead
	// and two probe intervals a timely bookmark may prove its instant
	// (recentProof): the bookmark's lateness behind its schedule
	// (kube-apiserver's cacher sends bookmarks on a dispatch tick of 1 s,
	// jittered to 1.25 s), its way over the wire and through the
	// informer's queue.
	recentProofSlack = 5 * time.Second
	// proofPeriodSlack is how much staler than a bookmark period, the
	// freshness read's lead and a jittered probe interval a healthy quiet
	// store gets before a bookmark proves it fresh (proofPeriod): the same
	// lateness of the bookmark as recentProofSlack's.
	proofPeriodSlack = 5 * time.Second
	// outageSlack is how much farther apart than two probe intervals the
	// head samples around a commit may be before the probes count as
	// failing and the commit's time as unknown (DeliveryLag): the answers
	// of the samples themselves (a consistent read waits up to 3 s for
	// kube-apiserver's watch cache before etcd serves it).
	outageSlack = 5 * time.Second
)

// MarkOpaque records a resource version that is not an integer: no RV math
// from now on.
func (p *Proof) MarkOpaque() (first bool) {
	first = !p.opaque
	p.opaque, p.rv = true, 0
	return first
}

// Opaque reports whether the informer saw a resource version that is not
// an integer.
func (p *Proof) Opaque() bool { return p.opaque }

// sync brings the proofs into the space's current epoch: after a restore,
// the RV the informer held belongs to a lost history, and when writes
// proved the loss, what it proved since the last write that shared its
// history is withdrawn.
func (p *Proof) sync(env Env) {
	sp := env.Space
	// (per event: one comparison unless the space was restored since the list)
	if p.list != mustList && p.listEpoch != sp.Epoch() && sp.WritesBelow(p.listRV, p.listAt) > 0 && p.unlisted(env) {
		p.list = mustList
	}
	if p.epoch == sp.Epoch() {
		return
	}
	p.fresh = p.lostFresh(sp, p.previousFresh(sp))
	p.rv, p.lag, p.lagBasis, p.read, p.epoch = 0, 0, lagMeasured, nil, sp.Epoch()
}

// settle commits the withdrawal of an RV of another history before the
// informer moves on from it. An RV that is ahead only because its store
// has not listed since a restore (or listed during a loss not yet judged)
// is not of another history: unlisted judges the store, and moving on
// from it taints nothing.
func (p *Proof) settle(env Env) {
	if p.rv != 0 && p.contradicted(env) {
		p.fresh = p.withdrawn(env)
		p.tainted = true
	}
}

func (p *Proof) observe(rv uint64, env Env) {
	p.settle(env)
	p.settleLag(env)
	p.rv, p.rvAt, p.freshAtRV = rv, env.Now, p.fresh
}

// lostFresh is fresh once writes proved the history of the informer's RV
// lost: what it proved since the latest write that shared its history is
// withdrawn, and so is what it proved since the first write sent after the
// RV arrived that landed below it (of the new history: the restore came
// before its answer).
func (p *Proof) lostFresh(sp *Space, fresh time.Time) time.Time {
	if p.rv == 0 {
		return fresh
	}
	if same := sp.SameHistoryAt(p.rv, p.rvAt, p.epoch); !same.IsZero() {
		fresh = minTime(fresh, same)
	}
	if below := sp.FirstWriteBelow(p.rv, p.rvAt); !below.IsZero() {
		fresh = minTime(fresh, below)
	}
	return fresh
}

// previousFresh is fresh with what the informer's RV proved in the epoch
// the space left, if that was the one before and the store had listed in
// it (one that had not held objects of the history lost before it).
func (p *Proof) previousFresh(sp *Space) time.Time {
	fresh := p.fresh
	if p.rv != 0 && p.epoch+1 == sp.Epoch() && p.listEpoch == p.epoch && sp.Previous != nil && sp.Previous.Below(p.rv, p.rvAt) < AheadAfter {
		if at, ok := sp.Previous.FreshAtSeen(p.rv, p.rvAt); ok {
			fresh = maxTime(fresh, at)
		}
	}
	return fresh
}

// ApplyList records that the store replaced its content with a list at rv
// (a relist or a watch-list) that began at began, at env.Now; consistent
// when it read at RV "" (it held everything committed when it began).
func (p *Proof) ApplyList(rv uint64, began time.Time, consistent bool, env Env) {
	if p.opaque {
		return
	}
	p.sync(env)
	p.observe(rv, env)
	p.listAt, p.listRV, p.tainted = env.Now, rv, false
	lost, _ := env.Space.HistoryLost()
	// while writes land below the reads, a list may come from a watch cache
	// of the lost history: it proves nothing, and the store may still hold
	// objects of that history, until a write lands above the reads (then
	// the caches share etcd's history again, and so did the list)
	p.list, p.lossEpoch = listedInLoss, env.Space.Epoch()
	switch {
	case !lost:
		p.list, p.listEpoch = listed, env.Space.Epoch()
	case env.Space.ListedLost(rv):
		p.list = mustList // from a watch cache that kept the lost history
	}
	// the sawtooth's height is the API server's cadence, not the list's:
	// its peaks survive a relist
	p.anyProof, p.lag, p.lagAt, p.lagBasis, p.read = false, 0, env.Now, lagMeasured, nil
	if head, recv, ok := env.Space.Timeline.HeadBy(began); ok && head > rv && !lost {
		// a list is a delivery: one from a watch cache behind a head
		// known when it began leaves the store that far behind. A head
		// first answered while it was in flight (by another API server
		// behind a balancer, of writes elsewhere) may be newer than the
		// list's snapshot: it says nothing of the list. Without reads
		// that move the watch's cache, a cache behind the head may be
		// a quiet resource's, missing nothing; nor is a head of another
		// etcd any measure of it (lagUnsure).
		p.lag, p.lagHead = head-rv, recv
		if !consistent && !env.OwnReads || env.Unsettled {
			p.lagBasis = lagUnsure
		}
	}
	if consistent && !lost {
		p.prove(began, time.Time{}, env)
	}
	p.refresh(time.Time{}, env)
}

// ApplyEvent records that the store applied a watch event at rv.
func (p *Proof) ApplyEvent(rv uint64, env Env) {
	if p.opaque {
		return
	}
	p.sync(env)
	if head, recv, ok := env.Space.Head(); ok {
		// how far behind the head this event was: the largest of the
		// events measured against the same head sample (a burst delivered
		// at once) since the store was last proven caught up; a newer
		// head sample measures the store anew
		var sample uint64
		if head > rv {
			sample = head - rv
		}
		if p.lagNow(env) == 0 || recv.After(p.lagHead) {
			p.lag, p.lagBasis = sample, lagMeasured
		} else {
			p.lag = max(p.lag, sample)
			if p.lagBasis == lagBehind {
				p.lagBasis = lagMeasured
			}
		}
		p.lagAt, p.lagHead = env.Now, recv
	}
	if rv > p.rv {
		p.observe(rv, env)
	}
	if r := p.read; r != nil && rv >= r.head {
		p.read = nil // the watch cache reached the read's head
	}
	p.refresh(time.Time{}, env)
}

// proven returns when the store was last proven fresh (stored proofs and
// the latest head sample its RV covers) and when that was learned: a head
// sample the RV covers is learned when it is taken or when the store
// reached the RV, whichever came later.
func (p *Proof) proven(env Env) (at, learned time.Time) {
	at, learned = p.fresh, p.freshSeen
	if p.rv != 0 && !p.ahead(env) {
		if lost, _ := env.Space.HistoryLost(); !lost {
			if t, ok := env.Space.Timeline.FreshAtSeen(p.rv, p.rvAt); ok && t.After(at) {
				at, learned = t, maxTime(t, p.rvAt)
			}
		}
	}
	return at, learned
}

// lagNow returns the lag of the latest deliveries, or 0 once a proof
// after them shows the store caught up, learned promptly (a bookmark that
// proves only an old instant came late itself). A watch cache found not to
// catch up keeps its lag until a delivery says otherwise.
func (p *Proof) lagNow(env Env) uint64 {
	at, learned := p.proven(env)
	if p.lagBasis != lagBehind && !at.Before(p.lagAt) && learned.Sub(at) <= recentProof(env) {
		return 0
	}
	return p.lag
}

// settleLag forgets the lag of deliveries a prompt proof showed caught up,
// before a newer proof or RV replaces that proof: a later proof of an old
// instant (a quiet resource's watch cache moves with etcd's progress, not
// with the writes elsewhere) says nothing of the deliveries before the
// prompt one (TestASettledLagStaysSettled).
func (p *Proof) settleLag(env Env) {
	if p.lag != 0 && p.lagNow(env) == 0 {
		p.lag, p.lagBasis = 0, lagMeasured
	}
}

// settledAt is since when the lag stands: the latest delivery, or a
// prompt proof after it that the store caught up, or a watch without
// bookmarks reopened after a stall, or, without reads of its own, a
// bookmark after a stall (a stall that ended before any of them left
// nothing missing that the watch's server could send).
func (p *Proof) settledAt(env Env) time.Time {
	since := p.lagAt
	if at, learned := p.proven(env); p.lagBasis != lagBehind && at.After(since) && learned.Sub(at) <= recentProof(env) {
		since = at
	}
	if at, ok := env.Watch.Resumed(env.Now); ok && at.After(since) {
		since = at
	}
	if at := p.bookmarked; !env.OwnReads && at.After(since) && !env.Watch.StalledSince(at, env.Now) {
		// no read moves the watch's cache (HTTP/1.1 reads land on other
		// servers, or none are sent): a quiet resource's cache moves only
		// with etcd's progress notify, so no prompt proof may ever come,
		// and the head minus its RV counts other resources' writes. A
		// bookmark applied after the stall shows the store holds what
		// that cache holds; what the cache lacks, only a delivery or a
		// proof measures.
		since = at
	}
	return since
}

// ApplyBookmark records that the store applied a bookmark at rv, received
// from the watch at received.
func (p *Proof) ApplyBookmark(rv uint64, received time.Time, env Env) {
	if p.opaque {
		return
	}
	p.sync(env)
	p.bookmarked = env.Now
	shown, _ := p.proven(env) // what the staleness showed before it
	if rv > p.rv {
		p.observe(rv, env)
	}
	if r := p.read; r != nil && env.OwnReads {
		switch {
		case rv >= r.head:
			p.read = nil
			if p.lagBasis == lagBehind {
				p.lagBasis = lagMeasured
			}
		case received.Sub(r.recv) > DispatchSlack:
			// a bookmark sent after a consistent read on the same
			// connection answered carries at least the read's head,
			// unless the watch cache behind that connection did not
			// catch up
			p.read = nil
			p.lag, p.lagAt, p.lagBasis = r.head-rv, env.Now, lagBehind
		}
		// else it may have been sent as the read answered: the next
		// bookmark (or readUnmet, a cadence on) judges the read
	}
	p.held = env.Watch.Held(received)
	p.refresh(maxTime(shown, p.fresh), env)
	p.held = false
}

// recentProof is how old the instant a timely bookmark proves is, at most:
// the freshness read's lead, two probe intervals, and recentProofSlack.
func recentProof(env Env) time.Duration { return FreshenLead + 2*env.ProbeInterval + recentProofSlack }

// Read records a consistent read of the informer's resource on its own
// connection, answered at recv with head: the next bookmark must carry at
// least head.
func (p *Proof) Read(head uint64, recv time.Time) {
	p.read = &read{head: head, recv: recv}
	p.readFailed = time.Time{}
}

// ReadFailed records that a consistent read of the informer's resource,
// sent at sent, did not answer: on its own connection, its store's
// freshness may be blind (see blind); on any, a sawtooth across it is no
// healthy one (see prove).
func (p *Proof) ReadFailed(sent time.Time) { p.readFailed = maxTime(p.readFailed, sent) }

// blind reports whether the store's freshness is unknown: it rests on the
// informer's own reads and its server's bookmarks (nothing proved the
// store fresh since the latest read was sent: its resource is quiet), the
// latest read failed, and its watch stayed live since. A quiet cache's bookmark proves freshness only as of
// the read before it (the read makes the watch cache catch up); without
// the read the bookmark carries the cache's old RV, and staleness would
// grow for a store missing nothing, as it would for one whose head probe
// fails (then it is unknown too). A watch silent beyond its cadence is a
// stall: then staleness grows.
func (p *Proof) blind(fresh time.Time, env Env) bool {
	f := p.readFailed
	return env.OwnReads && env.Watch.Bookmarks() && !f.IsZero() && fresh.Before(f) && !env.Watch.StalledSince(f, env.Now)
}

// readUnmet reports whether a consistent read on the informer's own
// connection answered a head above rv and nothing delivered since reached
// it by the first bookmark due after it (or a cadence after it, if that
// comes first). The read makes a healthy watch cache catch up, so its
// next bookmark (or the one before the watch's timeout) carries the
// read's head; a stuck cache sends none, ends the watch on time, and the
// reopened watch's cadence starts anew: only the read still shows it.
// The bookmark due after the read is due whatever the cadence learned: a
// stuck session that heard nothing until its timeout stretches the
// cadence, not the server's schedule after a read moved its cache.
func (p *Proof) readUnmet(rv uint64, env Env) bool {
	r := p.read
	if r == nil || !env.OwnReads || rv >= r.head {
		return false
	}
	return env.Watch.Unmet(r.recv, env.Now)
}

// Canary records that a canary written at sent reached the store by
// env.Now: the store held everything committed before sent.
func (p *Proof) Canary(sent time.Time, env Env) {
	p.sync(env)
	p.prove(sent, time.Time{}, env)
}

// refresh moves fresh forward to the latest head sample the informer's RV
// covers; a bookmark that does so closes a sawtooth whose staleness showed
// since sawtooth (zero: not a bookmark).
func (p *Proof) refresh(sawtooth time.Time, env Env) {
	if p.rv == 0 || p.ahead(env) {
		return
	}
	if lost, _ := env.Space.HistoryLost(); lost {
		return
	}
	if at, ok := env.Space.Timeline.FreshAtSeen(p.rv, p.rvAt); ok {
		p.prove(at, sawtooth, env)
	}
}

// prove records that the store held everything committed by at. A bookmark
// that proves it closes a sawtooth (whose staleness showed since sawtooth:
// zero for any other proof), whose peak counts toward the proof period
// when it was healthy: the watch gave a sign of life at its cadence,
// was not reopened (a reopened watch gets its cadence anew, so its silence
// across the reopen never counts as a stall), the head was known all
// along, no freshness read failed across it (its watch cache did not
// move for want of it), and neither bookmark that opened or closed it
// was held on the way.
func (p *Proof) prove(at, sawtooth time.Time, env Env) {
	if !at.After(p.fresh) || p.unlisted(env) {
		return
	}
	p.settleLag(env)
	if !sawtooth.IsZero() && p.anyProof && !p.held && !p.heldFresh && !env.Watch.StalledSince(p.fresh, env.Now) && !env.Space.GapSince(p.fresh, env.Now) && !env.Watch.BrokenSince(p.fresh) && !p.readFailed.After(p.fresh) && !env.Incident.After(p.fresh) {
		// a sawtooth opened by a list rises from the list's end, when
		// the new watch's cadence began: the staleness the list brought
		// with it (a watch cache's old RV, the list's own latency, the
		// wait for the watch to start) is the relist's, not the cadence's
		start := maxTime(maxTime(p.fresh, sawtooth), p.listAt)
		p.peaks = append(p.peaks, peak{at: env.Now, peak: env.Now.Sub(start)})
		if len(p.peaks) > maxPeaks {
			p.peaks = p.peaks[1:]
		}
	}
	p.fresh, p.freshSeen, p.anyProof, p.heldFresh = at, env.Now, true, p.held
}

// unlisted reports whether the store may hold objects of a history its
// space lost or never had: the space was restored since the informer last
// listed, or the store moved on from an RV of another history.
func (p *Proof) unlisted(env Env) bool {
	return p.tainted || p.unlistedSinceRestore(env)
}

// unlistedSinceRestore is unlisted but for the taint of an RV of another
// history.
func (p *Proof) unlistedSinceRestore(env Env) bool {
	if p.list == mustList {
		return true
	}
	sp := env.Space
	if p.list == unlisted || p.listEpoch == sp.Epoch() {
		return false
	}
	if lost, _ := sp.HistoryLost(); p.list == listedInLoss && p.lossEpoch == sp.Epoch() && !lost && !p.lossListContradicted(env) {
		return false
	}
	// a list between the restore and its detection may be of the new
	// history already (the API servers restarted and the informer relisted
	// before a probe saw the head go back), unless a write requested after
	// it landed below its RV: then it came from a watch cache that kept the
	// lost history (sync keeps that verdict once the writes leave memory)
	return !(p.listEpoch+1 == sp.Epoch() && sp.OfNewHistory(p.listAt, p.listRV) && sp.WritesBelow(p.listRV, p.listAt) == 0)
}

// lossListContradicted reports whether the latest list, taken during a
// loss, is contradicted by a write requested after it that landed below
// its RV (the writes still in the space's ring; sync keeps the verdict as
// mustList).
func (p *Proof) lossListContradicted(env Env) bool {
	return p.list == listedInLoss && p.lossEpoch == env.Space.Epoch() && env.Space.WritesBelow(p.listRV, p.listAt) > 0
}

// ahead reports whether the informer's RV is of another history than its
// space's: samples or writes requested after it arrived saw lower
// revisions, or the store has not listed since a restore.
func (p *Proof) ahead(env Env) bool {
	return p.unlisted(env) || p.contradicted(env)
}

// contradicted reports whether samples or writes requested after the
// informer's RV arrived saw lower revisions: the RV is of another history.
func (p *Proof) contradicted(env Env) bool {
	return p.rv != 0 && (env.Space.Timeline.Below(p.rv, p.rvAt) >= AheadAfter || env.Space.WritesBelow(p.rv, p.rvAt) >= AheadAfter)
}

// withdrawn is what fresh falls back to when the RV turns out to be of
// another history: what it was before the RV, or the latest write that
// landed at or above it (until then the RV was of etcd's history).
func (p *Proof) withdrawn(env Env) time.Time {
	return minTime(p.fresh, maxTime(p.freshAtRV, env.Space.SameHistoryAt(p.rv, p.rvAt, p.epoch)))
}

// Values are what an informer's proofs say at an instant. A value whose
// flag is false is unknown.
type Values struct {
	RV         uint64
	RVKnown    bool
	Ahead      bool
	Fresh      time.Time // the store provably held everything committed by then
	FreshKnown bool
	// Blind: freshness is unknown though Fresh, kept, was proven: the
	// reads it rests on fail (see Proof.blind); a proof of a later instant
	// (a canary's) makes it known again
	Blind            bool
	Lag              uint64
	LagKnown         bool
	ProofPeriod      time.Duration
	ProofPeriodKnown bool
}

// Snapshot returns what the proofs say at env.Now. It changes nothing.
func (p *Proof) Snapshot(env Env) Values {
	var v Values
	if p.opaque {
		return v
	}
	sp := env.Space
	rv := p.rv
	if p.epoch != sp.Epoch() {
		// restored since: the RV is of a lost history, and the store ahead
		// of the head until it lists again, as it is once it applies
		// anything (sync)
		fresh := p.lostFresh(sp, p.previousFresh(sp))
		v.Fresh, v.FreshKnown = fresh, !fresh.IsZero()
		v.Ahead = p.unlisted(env)
		return v
	}
	v.RV, v.RVKnown = rv, rv != 0
	v.Ahead = p.ahead(env)
	if p.unlisted(env) && rv == 0 {
		fresh := p.fresh
		v.Fresh, v.FreshKnown = fresh, !fresh.IsZero()
		return v
	}
	fresh := p.fresh
	lost, _ := sp.HistoryLost()
	switch {
	case v.Ahead:
		fresh = p.withdrawn(env)
	case rv != 0 && !lost:
		if at, ok := sp.Timeline.FreshAtSeen(rv, p.rvAt); ok {
			fresh = maxTime(fresh, at)
		}
	}
	v.Fresh, v.FreshKnown = fresh, !fresh.IsZero()
	if v.FreshKnown && !v.Ahead && p.blind(fresh, env) {
		v.Blind, v.FreshKnown = true, false
	}
	if v.Ahead || rv == 0 {
		return v // staleness grows from the last proof; lag is unknown
	}
	head, _, ok := sp.Head()
	owed := env.Overdue != 0 && rv < env.Overdue || p.readUnmet(rv, env)
	switch {
	case !ok:
	case !owed && env.Watch.QuietOrStalled(env.Now):
		// its silence may be a quiet cache's as well as a stall: the
		// store may miss everything between its RV and the head, or
		// nothing (lag unknown; staleness grows)
	case owed || env.Watch.StalledSince(p.settledAt(env), env.Now):
		// silent longer than its cadence allows since its latest delivery
		// (or short of a write or a read it should have delivered):
		// everything between its RV and the head may be missing
		v.Lag, v.LagKnown = 0, true
		if head > rv {
			v.Lag = head - rv
		}
	default:
		if lag := p.lagNow(env); lag == 0 || p.lagBasis != lagUnsure {
			v.Lag, v.LagKnown = lag, true
		}
	}
	if p.anyProof {
		v.ProofPeriod, v.ProofPeriodKnown = p.proofPeriod(env), true
	}
	return v
}

// proofPeriod is how stale the store gets, healthy and quiet, before a
// bookmark proves it fresh again. With freshness reads on its own
// connection, a bookmark proves the store fresh as of the read before it,
// so the period follows from the server's: a bookmark period, the read's
// lead, a probe interval and its jitter, and proofPeriodSlack (a
// bookmark the server skipped because its cache did not move left nothing
// to prove: the head samples prove such a store fresh).
// Otherwise it is learned: the highest healthy peak of the last 30
// minutes (0 when only events proved freshness).
func (p *Proof) proofPeriod(env Env) time.Duration {
	if env.OwnReads && env.Watch.Bookmarks() {
		return env.Watch.Period() + FreshenLead + env.ProbeInterval*11/10 + proofPeriodSlack
	}
	var d time.Duration
	for _, pk := range p.peaks {
		if env.Now.Sub(pk.at) <= proofMemory {
			d = max(d, pk.peak)
		}
	}
	return d
}

// RV returns the highest RV the store holds (0: unknown).
func (p *Proof) RV() uint64 { return p.rv }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// DeliveryLag returns the delay of an event at rv that reached the store
// at now, as a lower bound: now minus the answer of the first head sample
// that saw rv (the commit came before it), or 0 when none did yet and the
// latest sample was recent (the commit came after it). bounded is false
// when the commit time is unknown (the samples around it were far apart:
// the probes were failing) — say so, do not record 0; ok is false when the
// space has no head at all.
func DeliveryLag(sp *Space, rv uint64, now time.Time, probeInterval time.Duration) (lag time.Duration, bounded, ok bool) {
	outage := 2*probeInterval + outageSlack
	if bound, after, found := sp.Timeline.CommitBound(rv); found {
		if after.IsZero() || bound.Sub(after) <= outage {
			return max(0, now.Sub(bound)), true, true
		}
		return 0, false, true
	}
	age, known := sp.HeadAge(now)
	if !known {
		return 0, false, false
	}
	return 0, age <= outage, true
}

// CommittedBy returns a time by which rv was committed: the answer of the
// first head sample that saw it, or known, a time already known to follow
// the commit, if that is earlier. ok is false when the space has no current
// head (no head probe, or it has not answered lately).
func CommittedBy(sp *Space, rv uint64, known, now time.Time) (time.Time, bool) {
	if age, ok := sp.HeadAge(now); !ok || age > sp.UnknownAfter() {
		return time.Time{}, false
	}
	if bound, _, ok := sp.Timeline.CommitBound(rv); ok && bound.Before(known) {
		return bound, true
	}
	return known, true
}

// Reset forgets everything proven: the informer's resource moved to
// another RV space, in its epoch epoch, against whose head nothing was
// proven yet; env is of the space it leaves. A store that had not listed since that space's restore still
// holds objects of the lost history: it proves nothing until it lists
// again, in the new space too. Any other store that listed holds what it
// listed, of the etcd its new space reads: it stands listed there as of
// that list, in the new space's epoch, so that a restore the new space
// sees later finds it unlisted since, as any store of it (simulation seed
// 1050566: left "never listed", which no restore concerns, a store whose
// watch resumed above a restore's lost revisions passed for fresh).
func (p *Proof) Reset(env Env, epoch uint64) {
	q := Proof{opaque: p.opaque, peaks: p.peaks, list: p.list, listAt: p.listAt, listRV: p.listRV, listEpoch: epoch}
	switch {
	case p.unlistedSinceRestore(env):
		q.list = mustList
	case p.list == listedInLoss:
		// the loss was of the space it leaves: of another etcd
		q.list = listed
	}
	*p = q
}
