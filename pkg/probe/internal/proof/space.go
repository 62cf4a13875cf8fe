package proof

import (
	"slices"
	"time"
)

// Space settles the head samples of one RV space: the resources whose RVs
// come from one etcd (by default, the whole cluster). Every consistent
// read of a resource of the space is a head sample: the head probe's and
// the freshness reads. One source, the reference, speaks for the space: the
// first one registered, kept while it answers (after refFailover failures
// in a row the next source takes over). Its samples are the space's head.
//
// Samples of the other sources are checked against it. One etcd's revision
// never decreases, so:
//   - a sample of another source above the latest head is taken
//     provisionally, and when the reference, asked after it answered, sees
//     a lower head, that source reads another etcd (a higher one): its
//     samples are dropped and it is named foreign;
//   - a sample of another source below the latest head, asked after that
//     head was answered, waits for the reference's next sample: if that one
//     is lower too, the store went back (etcd restored from a backup: both
//     sources agree); if not, that source reads another etcd (a lower one);
//   - the reference itself going lower is a restore once it stays lower
//     for settleAfter samples, or another source agrees, or it answered
//     higher itself before (a resource lives on one etcd: its consistent
//     reads never go back within a history);
//   - a source that answers with a resource version that is not an integer
//     (an extension API server) is foreign to a space of integers, unless
//     it is the reference: then the space is opaque.
//
// A foreign source leaves the space (its caller gives it a space of its
// own); a restore resets the timeline and starts a new epoch, in which RVs
// of the old history prove nothing.
type Space struct {
	Timeline *Timeline
	// Previous is the timeline of the epoch before the current one: what
	// informers that have not moved on from it proved in it still stands.
	Previous *Timeline
	sources  []int32
	ref      int32 // the reference source; -1: none
	refFails int
	// anchor is the canary's resource made the reference (Anchor); -1:
	// none. It reads the etcd the canary writes to, the space's, so it
	// stays settled when the reference fails over to another source.
	anchor   int32
	opaque   bool
	integers bool // a source answered with an integer head once
	epoch    uint64

	// the latest head probe (not a freshness read) that answered: the head's age
	lastProbe time.Time
	// the reference's latest head, for lag
	refHead uint64
	refRecv time.Time
	refOK   bool

	suspect *held          // the reference's lower sample, not yet settled
	low     map[int32]held // other sources' lower samples, not yet settled
	// own: each source's highest sample of the current history. A
	// resource lives on one etcd and every sample is a consistent read:
	// one below a sample of the same source answered before it was sent
	// is that etcd going back, whoever answered the head in between (after
	// the reference failed over, a new reference reads lower than the
	// head of the old: another etcd, or a restore; its own reads tell)
	own map[int32]held
	// lostReads: sources whose own reads a write to their resource, sent
	// after one of them answered, landed below: in one history a write
	// commits above every read of its resource answered before it was
	// sent, so their reads come from a watch cache frozen in a history
	// etcd lost, not from another etcd, until a write of theirs lands
	// above them again (OwnWrite)
	lostReads map[int32]bool
	// above: other sources' latest samples above the head, taken
	// provisionally until the reference, asked after them, says
	above map[int32]held
	// confirmed counts, per source, the samples the reference's head
	// probe, asked after each answered, found at or below its own head (a
	// consistent read of the reference's etcd), with the head moving on
	// between them; a source is settled at confirmAfter (Unsettled). It is
	// never taken back: a resource does not change etcd while its API
	// server runs, and after a restore the watch caches frozen in the lost
	// history contradict each other (which is why a contradiction needs
	// the head moving on to count, see contradict)
	confirmed map[int32]confirmation
	backoff   map[int32]backoff
	// contradicted counts, per source, the times the reference contradicted
	// its samples while the reference's head moved on: a source is foreign
	// only after foreignAfter such, not after one (API servers' watch caches
	// frozen at different revisions of a history etcd lost contradict each
	// other too, but none of them moves)
	contradicted map[int32]contradiction

	// lostWrite is the RV of the write that proved the history lost, until
	// a write lands above the reads again (above the lost history's latest
	// head where nothing reads the head): one loss, counted once.
	lostWrite uint64
	lostAt    time.Time
	// tookOver: the reference took its role over after a loss was
	// proven, and no write has landed above its reads since: it may read
	// a watch cache frozen in the history etcd lost (a write that follows
	// a read of the live history lands above it, so this lasts about a
	// canary interval where the reads are live). tookOverAt is when the
	// head it took over was answered: a write above that head is above
	// the old reference's reads, not its own (simulation seed 4036651)
	tookOver   bool
	tookOverAt time.Time
	known      bool // the latest regression followed a loss counted before
	// readsWentBack: the epoch began with the reads going back (counted
	// then) to fellTo, not with a write, with a sample requested at epochAt
	readsWentBack bool
	epochAt       time.Time
	fellTo        uint64
	// ended is the latest sample of the history the latest regression left
	// behind: a list completed after it at an RV below it is of the new
	// history (one etcd's revision never goes back within a history)
	ended struct {
		recv time.Time
		head uint64
	}
	writes  [maxWrites]write // the latest writes, a ring
	nWrites int
	// endedWrites: for the latest epochs that ended, their writes still
	// in the ring when they ended (what bounds what their reads proved,
	// and what shows which RVs were of another history, once the new
	// history's writes filled the ring)
	endedWrites []write

	interval time.Duration // of the head probe
	gapEnded time.Time     // when a probe answered after the head was unknown
}

// write is a write to the space's etcd: its RV and when it was requested.
type write struct {
	rv    uint64
	sent  time.Time
	epoch uint64 // the space's epoch once the write's answer was judged
	// unsure: it landed below a head whose read answered after it was
	// sent. The read may have seen it and more, or come from a watch cache
	// of a history etcd lost while the write landed in the new one: it
	// proves nothing of its epoch's history.
	unsure bool
}

type held struct {
	rv         uint64
	sent, recv time.Time
	samples    int
	refHead    uint64 // the reference's head when it was held
}

// foreignAfter is how many contradictions, with the reference moving on
// between them, make a source foreign.
const foreignAfter = 2

// confirmAfter is how many confirmations, with the reference moving on
// between them, settle a source: two etcds whose revisions happen to lie
// close confirm once by chance, rarely twice while both move.
const confirmAfter = 2

// confirmation is how often the reference confirmed one source, and its
// head the latest time.
type confirmation struct {
	n   int
	ref uint64
}

type backoff struct{ skip, failures int }

// contradiction is how often the reference contradicted one source, and
// the reference's head and the source's sample the latest time.
type contradiction struct {
	n        int
	ref, src uint64
}

// maxWrites is how many of the latest writes a space keeps to judge
// whether an RV shares etcd's history: the canary's, one each 10 s by
// default, about five minutes of them (an ended epoch keeps its own, see
// maxEndedEpochs).
const maxWrites = 32

// maxEndedEpochs is how many ended epochs keep their writes.
const maxEndedEpochs = 8

// settleAfter is how many lower samples of the reference alone make a
// restore.
const settleAfter = 3

// refFailover is how many failures of the reference in a row hand its role
// to the next source.
const refFailover = 3

// NewSpace returns a space whose timeline holds capacity runs, probed
// every interval.
func NewSpace(capacity int, base time.Time, interval time.Duration) *Space {
	return &Space{Timeline: NewTimeline(capacity, base), ref: -1, anchor: -1, low: map[int32]held{}, own: map[int32]held{}, lostReads: map[int32]bool{}, above: map[int32]held{}, confirmed: map[int32]confirmation{}, backoff: map[int32]backoff{}, contradicted: map[int32]contradiction{}, interval: interval}
}

// UnknownAfter is how old the latest head probe may get before the head is
// unknown: a few missed probes, never less than 15s.
func (s *Space) UnknownAfter() time.Duration {
	return max(unknownAfterProbes*s.interval, minUnknownAfter)
}

// The head is unknown once the latest head probe that answered is older
// than unknownAfterProbes probe intervals and than minUnknownAfter: one
// probe may wait out its timeout (the probe interval, at least 5 s) and
// the next still answer in time.
const (
	unknownAfterProbes = 3
	minUnknownAfter    = 15 * time.Second
)

// AddSource adds a source (once); the first becomes the reference.
func (s *Space) AddSource(id int32) {
	if slices.Contains(s.sources, id) {
		return
	}
	s.sources = append(s.sources, id)
	if s.ref < 0 {
		s.ref = id
	}
}

// Anchor makes source id the reference before any sample: the canary
// writes to its resource, and writes land in their resource's etcd, so the
// reads of the same resource are the space's head (a resource of another
// etcd, listed first, would otherwise set a head that every write lands
// below, a restore that never was). It reports whether it did: once
// samples were taken the reference stays, and so does the first canary's
// anchor (a second canary's resource may be of another etcd, as events'
// on an etcd of their own: its reads would set a head every write of the
// first canary lands below; the samples settle which etcd it reads).
func (s *Space) Anchor(id int32) bool {
	if !slices.Contains(s.sources, id) || s.Timeline.Generation() > 0 || s.anchor >= 0 {
		return false
	}
	s.sources = append([]int32{id}, slices.DeleteFunc(s.sources, func(x int32) bool { return x == id })...)
	s.ref, s.refFails, s.anchor = id, 0, id
	return true
}

// RemoveSource removes a source.
func (s *Space) RemoveSource(id int32) {
	s.sources = slices.DeleteFunc(s.sources, func(x int32) bool { return x == id })
	delete(s.low, id)
	delete(s.own, id)
	delete(s.lostReads, id)
	delete(s.above, id)
	delete(s.confirmed, id)
	delete(s.backoff, id)
	delete(s.contradicted, id)
	if s.anchor == id {
		s.anchor = -1
	}
	if s.ref == id {
		s.ref, s.refFails = -1, 0
		if len(s.sources) > 0 {
			s.takeOver(s.sources[0])
		}
	}
}

// Sources returns the sources, in order.
func (s *Space) Sources() []int32 { return slices.Clone(s.sources) }

// Reference returns the reference source (-1: none).
func (s *Space) Reference() int32 { return s.ref }

// Unconfirmed returns up to n sources, in order, that the reference has
// not confirmed confirmAfter times nor found foreign: those whose etcd the
// samples have not settled, and the canary's anchor once the reference
// failed over from it (its reads check the new reference's etcd, as the
// new reference's check its). Freshness reads sample only quiet
// resources, and none when they are off; without a read of its own, a
// resource of another etcd listed beside the reference would share its
// head and its restores for good. The head probe reads these after the
// reference answered (one consistent read each), until the reference
// confirms each or its contradictions make it foreign. A source whose reads
// fail is left out while it backs off (see Failed and Order).
func (s *Space) Unconfirmed(n int) []int32 {
	var out []int32
	for _, id := range s.sources {
		if len(out) == n {
			break
		}
		if id != s.ref && s.confirmed[id].n < confirmAfter && s.backoff[id].skip == 0 {
			out = append(out, id)
		}
	}
	return out
}

// Settled reports whether source id's etcd is known to be the space's:
// it is the reference, the canary's anchor (the reference until a
// failover: simulation seed 1051548, unsettled by a failover through an
// API server's restart, the canary's writes counted nothing, and a
// restore right after it went unseen), or the reference confirmed it
// confirmAfter times; current is false when id is no source of the space.
func (s *Space) Settled(id int32) (settled, current bool) {
	if !slices.Contains(s.sources, id) {
		return false, false
	}
	return id == s.ref || id == s.anchor || s.confirmed[id].n >= confirmAfter, true
}

// Order returns the sources a head probe tries, in order: the reference
// first; sources backing off after failures not at all this time.
func (s *Space) Order() []int32 {
	var order []int32
	for i := range s.sources {
		id := s.sources[i]
		if id == s.ref {
			order = append([]int32{id}, order...)
			continue
		}
		if b := s.backoff[id]; b.skip > 0 {
			b.skip--
			s.backoff[id] = b
			continue
		}
		order = append(order, id)
	}
	return order
}

// Failed records a failed read of source id; it returns how many times in a
// row it failed.
func (s *Space) Failed(id int32) int {
	b := s.backoff[id]
	b.failures++
	b.skip = min(1<<min(b.failures-1, 4), 12) - 1
	s.backoff[id] = b
	if id == s.ref {
		s.refFails++
		if s.refFails >= refFailover {
			if next, ok := s.successor(id); ok {
				// the next accepted sample, whoever answers it, is the head
				s.refFails, s.refOK = 0, false
				s.takeOver(next)
			}
		}
	}
	return b.failures
}

// takeOver hands the reference's role to id; after a loss, its reads may
// be of a watch cache frozen in the lost history (tookOver).
func (s *Space) takeOver(id int32) {
	s.ref = id
	if s.tookOver = s.epoch > 0; s.tookOver {
		_, s.tookOverAt, _ = s.Timeline.LatestConfirmed()
	}
}

// successor returns the source that takes the reference's role from id
// after its failures: the next in order that the reference never
// contradicted without confirming it. A source read below the head and
// contradicted once, that neither side moved on from since, may read
// another etcd (two quiet etcds, one at revision 1,000, the other at
// 10,000,000): as the reference, its etcd's restore would be counted for
// every resource of the space, and the head it set would be another
// etcd's (simulation seed 1310965: a regression counted for events, on
// an etcd of its own, when the main etcd was restored through the
// reference's outage). Without one, the reference keeps its role and the
// head goes unknown until it answers.
func (s *Space) successor(id int32) (int32, bool) {
	i := slices.Index(s.sources, id)
	if i < 0 {
		return 0, false
	}
	for k := 1; k < len(s.sources); k++ {
		if next := s.sources[(i+k)%len(s.sources)]; !s.Doubted(next) {
			return next, true
		}
	}
	return 0, false
}

// Doubted reports whether source id may read another etcd than the
// space's: the reference contradicted it and never confirmed it (two idle
// etcds: neither side moves on, so it is never found foreign). A restore
// of the space is no regression of its resource, and it never takes the
// reference's role (see successor).
func (s *Space) Doubted(id int32) bool {
	return id != s.ref && id != s.anchor && s.contradicted[id].n > 0 && s.confirmed[id].n == 0
}

// Verdict is what a sample meant.
type Verdict struct {
	Accepted bool    // it is a head sample of the space now
	Foreign  []int32 // sources found to read another etcd: they left the space
	// Regressed: the head went back (etcd restored from a backup); the
	// timeline restarted and a new epoch began.
	Regressed bool
	// Known: the regression is the reads catching up with a loss a write
	// proved before (counted then).
	Known bool
}

// Sample settles a read of source id requested at sent and answered at
// recv: rv is the head it saw, integer false when that was not an integer.
// probe says it was a head probe (not a freshness read): head probes keep
// the head's age.
func (s *Space) Sample(id int32, rv uint64, integer bool, sent, recv time.Time, probe bool) Verdict {
	ref := s.ref
	v := s.sample(id, rv, integer, sent, recv, probe)
	if !integer {
		return v
	}
	if o, ok := s.own[id]; !ok || rv > o.rv {
		s.own[id] = held{rv: rv, sent: sent, recv: recv}
	}
	if probe && (v.Accepted || id == ref) {
		if !s.lastProbe.IsZero() && sent.Sub(s.lastProbe) > s.UnknownAfter() {
			s.gapEnded = sent
		}
		s.lastProbe = maxTime(s.lastProbe, sent)
	}
	if v.Accepted && (id == s.ref || !s.refOK) {
		s.refHead, s.refRecv, s.refOK = max(s.refHead, rv), recv, true
	}
	return v
}

func (s *Space) sample(id int32, rv uint64, integer bool, sent, recv time.Time, probe bool) Verdict {
	var v Verdict
	delete(s.backoff, id)
	if id == s.ref {
		s.refFails = 0
	}
	if integer {
		s.integers = true
	}
	if !integer {
		if id == s.ref && !s.integers {
			s.opaque = true // an extension API server's space
			return v
		}
		// a source of a space of integers answering with something else
		// (one that took over the reference after failures, too)
		return s.foreign(v, id)
	}
	if id == s.ref {
		s.opaque = false
	}
	latest, latestRecv, has := s.Timeline.Latest()
	switch {
	case !has || rv >= latest:
		if id == s.ref && probe {
			s.Timeline.Add(sent, recv, rv)
		} else {
			// another source's, or a freshness read of the reference's
			// resource on an informer's connection (maybe to another API
			// server): the reference's probe may contradict it
			s.Timeline.AddProvisional(sent, recv, rv)
			if id != s.ref {
				s.above[id] = held{rv: rv, sent: sent, recv: recv}
			}
		}
		v.Accepted = true
		if id == s.ref && probe {
			s.confirm(rv, sent)
		}
		if id == s.ref {
			s.suspect = nil
			// the reference is back or still at its etcd's head: lower
			// samples of others, taken before, contradict it (a
			// consistent read of one etcd is never below a head answered
			// before it was sent; contradict counts a second only once
			// either side moved on)
			for src, l := range s.low {
				if l.recv.Before(sent) {
					delete(s.low, src)
					if rv >= l.refHead {
						v = s.contradict(v, src, rv, l.rv)
					}
				}
			}
		}
	case sent.Before(latestRecv):
		// begun before the latest answer came: an older snapshot, which
		// says nothing, unless it is below a head the reference had
		// answered before it was sent (a resource of another, lower etcd
		// whose freshness reads go out in the same round as others':
		// they always race a higher answer)
		if known, _, ok := s.Timeline.HeadBy(sent); id != s.ref && ok && rv < known {
			s.holdLow(id, rv, sent, recv, known)
		}
		return v
	case id == s.ref && !probe:
		// a freshness read of the reference's resource saw less than the
		// head: its API server's cache is behind another's (frozen at its
		// revision of a history etcd lost, or a restore the reference's
		// next probe will see)
		return v
	case id == s.ref:
		// the reference saw less than a head answered before it was asked
		if provisional, _ := s.Timeline.ProvisionalAbove(rv); provisional {
			// every head above came from other sources, or from freshness
			// reads of the reference's resource on another connection
			// (watch caches of other API servers or resources, frozen at
			// a higher revision of a history etcd lost, or another etcd):
			// drop them, no restore; each other source that answered
			// above before this was asked is contradicted, foreign once
			// the reference moved on between two (several at once: the
			// resources of another etcd, read in one round)
			s.Timeline.TruncateAbove(rv)
			// a head of theirs taken before the reference first answered
			// goes too
			s.refHead = min(s.refHead, rv)
			for src, h := range s.above {
				if h.rv > rv && h.recv.Before(sent) {
					delete(s.above, src)
					v = s.contradict(v, src, rv, h.rv)
				}
			}
			s.Timeline.Add(sent, recv, rv)
			v.Accepted = true
			if probe {
				s.confirm(rv, sent)
			}
			return v
		}
		if s.suspect == nil {
			s.suspect = &held{rv: rv, sent: sent, recv: recv}
		}
		s.suspect.samples++
		// the reference's own earlier read, above this one: its etcd went back
		o, ok := s.own[id]
		agreed := ok && rv < o.rv && o.recv.Before(sent)
		for src, l := range s.low {
			if l.rv <= latest {
				agreed = true
				delete(s.low, src)
			}
		}
		if s.suspect.samples < settleAfter && !agreed && len(s.sources) > 1 {
			return v
		}
		s.readsFell(rv, sent)
		s.Timeline.Add(sent, recv, rv)
		v.Accepted, v.Regressed, v.Known = true, true, s.known
	default:
		// another source saw less than the head: a restore (the reference
		// will see it too) or another etcd; its next sample tells
		if s.suspect != nil {
			// the new history begins at the reference's lower sample; this
			// source's, if above it, may come from a watch cache of the
			// lost history: provisional
			sus := *s.suspect
			s.readsFell(sus.rv, sus.sent)
			s.Timeline.Add(sus.sent, sus.recv, sus.rv)
			s.Timeline.AddProvisional(sent, recv, rv)
			v.Accepted, v.Regressed, v.Known = true, true, s.known
			return v
		}
		s.holdLow(id, rv, sent, recv, latest)
	}
	return v
}

// confirm settles the sources whose samples above the head the
// reference's probe at rv, sent at sent, answered after: at or above them,
// they read its etcd (a source of a higher etcd reads above the reference,
// and is contradicted; of a lower one, below the head, and is held low).
func (s *Space) confirm(rv uint64, sent time.Time) {
	for src, h := range s.above {
		if h.rv <= rv && h.recv.Before(sent) {
			if c := s.confirmed[src]; c.n == 0 || rv > c.ref {
				s.confirmed[src] = confirmation{n: c.n + 1, ref: rv}
			}
			delete(s.above, src)
		}
	}
}

// holdLow holds a sample of another source below head until the
// reference's next sample tells a restore (it is lower too) from another
// etcd (it moved on above head: a contradiction).
func (s *Space) holdLow(id int32, rv uint64, sent, recv time.Time, head uint64) {
	l := s.low[id]
	s.low[id] = held{rv: rv, sent: sent, recv: recv, samples: l.samples + 1, refHead: head}
}

// contradict counts a contradiction of source id's sample srcRV by the
// reference at head rv, and names it foreign at the foreignAfter-th with
// the reference's head or the source's samples moving on in between (one
// etcd above another idle one moves alone; frozen caches move neither).
// While a write shows the reads to be of a lost history, none counts: its
// API servers' caches, frozen at different revisions of it, contradict
// each other, and reads that reach either (HTTP/1.1 behind a balancer)
// seem to move on (simulation seed 391091: the same restore counted again
// in the space a resource was moved to). Nor is the canary's anchor ever
// contradicted: its etcd is the space's, whichever source the reference
// failed over to (simulation seed 1007935: a reference that took over
// through a probe outage found the anchor foreign after a restore, and
// the anchor's next write, in a space of its own headed by a frozen cache
// of the lost history, counted the restore again).
func (s *Space) contradict(v Verdict, id int32, rv, srcRV uint64) Verdict {
	if s.lostWrite != 0 || id == s.anchor || s.lostReads[id] {
		return v
	}
	c := s.contradicted[id]
	if c.n > 0 && rv <= c.ref && srcRV <= c.src {
		return v
	}
	c.n, c.ref, c.src = c.n+1, rv, srcRV
	s.contradicted[id] = c
	if c.n >= foreignAfter {
		return s.foreign(v, id)
	}
	return v
}

func (s *Space) foreign(v Verdict, id int32) Verdict {
	s.RemoveSource(id)
	v.Foreign = append(v.Foreign, id)
	return v
}

// readsFell records that the reads went back to rv, in a sample requested
// at sent. After a restore they may fall more than once: to watch caches
// frozen at different revisions of the lost history (below the head
// before it; with HTTP/1.1 behind a balancer each pooled connection may
// land on another server, so the reads go up and down between them), and
// to etcd's revision. A history that began with the reads falling, that
// no write moved on since and whose reads never went above the lost
// history's head, may not have lived: its reads may all be of caches of
// the lost history, so falling again is the same loss (simulation seed
// 2751095: caches frozen at 21,400 and 21,900, etcd's new history at
// 21,700, no canary; the one restore counted three times). Only the
// reference's heads show the new history outgrew the lost one: another
// source's, provisional, may be of a cache frozen in the lost history
// later than the reads last saw it (simulation seed 3766864: the head
// probe's last read 23,700, the configmaps' cache frozen at 23,900; the
// one restore counted twice). A second restore before etcd's new history
// outgrows the lost one is told only by a write (the canary's) landing
// below its reads.
func (s *Space) readsFell(rv uint64, sent time.Time) {
	if head, _, ok := s.Timeline.LatestConfirmed(); s.readsWentBack && !s.movedSince(s.epochAt, s.fellTo) && (!ok || head <= max(s.fellTo, s.ended.head)) {
		s.forgetReads()
		s.known, s.fellTo = true, rv
		return
	}
	s.regress()
	s.readsWentBack, s.epochAt, s.fellTo = !s.known, sent, rv
}

func (s *Space) regress() {
	s.known = s.lostWrite != 0
	if s.known {
		// the reads catch up with a loss a write proved, and counted, before:
		// the samples since came from watch caches of the lost history
		s.forgetReads()
		return
	}
	if head, recv, ok := s.Timeline.Latest(); ok {
		s.ended.head, s.ended.recv = head, recv
	}
	// the writes of the history left behind saw it too (the head probe may
	// have been failing while it ran on)
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if w.epoch == s.epoch && w.rv > s.ended.head {
			s.ended.head, s.ended.recv = w.rv, maxTime(s.ended.recv, w.sent)
		}
	}
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if w.epoch == s.epoch {
			s.endedWrites = append(s.endedWrites, w)
		}
	}
	for len(s.endedWrites) > 0 && s.endedWrites[0].epoch+maxEndedEpochs <= s.epoch {
		s.endedWrites = s.endedWrites[1:]
	}
	s.Previous = s.Timeline.Clone()
	s.epoch++
	s.forgetReads()
}

// forgetReads drops what the reads of the current history said.
func (s *Space) forgetReads() {
	s.Timeline.Reset()
	s.suspect = nil
	clear(s.low)
	clear(s.own)
	clear(s.lostReads)
	clear(s.above)
	s.refHead, s.refOK = 0, false
}

// movedSince reports whether a write of the current epoch requested after
// t landed above rv: the history the reads fell to (rv) lived on. One
// requested before may have committed in the history lost, and one below
// rv did not move it: rv may be a watch cache's of the lost history, and
// the write of etcd's restored one (simulation seed 2001186).
func (s *Space) movedSince(t time.Time, rv uint64) bool {
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if w.epoch == s.epoch && w.sent.After(t) && w.rv > rv {
			return true
		}
	}
	return false
}

// Write checks a write to the space's etcd, requested at sent, that
// committed at rv; below says the writer knows it landed below an earlier
// write of its own (writes are sequential). A write is the authoritative
// head: it commits after it is sent, so it lands above every head answered
// before. Reads can be served from an API server's watch cache that still
// holds a history etcd lost (restored from a backup while kube-apiserver
// ran on); a write cannot. lost is true for the write that proves such a
// loss (once per loss): the timeline restarts and a new epoch begins.
func (s *Space) Write(rv uint64, sent time.Time, below bool) (lost bool) {
	// judged against the reference's heads: a head only another source
	// saw may be of a watch cache frozen in a history etcd lost
	head, recv, ok := s.Timeline.LatestConfirmed()
	unsure := ok && rv < head && !sent.After(recv)
	defer func() {
		s.writes[s.nWrites%len(s.writes)] = write{rv: rv, sent: sent, epoch: s.epoch, unsure: unsure}
		s.nWrites++
	}()
	switch {
	case below || ok && rv < head && sent.After(recv):
		if s.lostWrite != 0 {
			return false
		}
		if s.readsWentBack && !s.movedSince(s.epochAt, s.fellTo) || s.tookOver {
			// the reads went back first (counted then) and still come
			// from watch caches of the history etcd lost, or the reference
			// that took over since, no write above its reads yet, reads
			// one (its resource's cache, frozen at a revision of that
			// history, maybe above what the exporter saw of it: simulation
			// seed 2111838): the same loss
			s.forgetReads()
			s.lostWrite, s.lostAt = rv, sent
			return false
		}
		s.regress()
		s.lostWrite, s.lostAt, s.readsWentBack = rv, sent, false
		return true
	case ok && rv > head && sent.After(recv):
		// a write above the reads: they share its history again, and it
		// lives on (a write below them now is a new loss); the reads of a
		// reference that took over since that head stay in question
		s.lostWrite, s.readsWentBack = 0, false
		s.tookOver = s.tookOver && !recv.After(s.tookOverAt)
	case !ok && s.lostWrite != 0 && s.headless() && rv > s.ended.head && sent.After(s.lostAt):
		// nothing ever read this space's head (a monitor whose Start never
		// runs): its writes are all it reads of etcd, and one above
		// everything the lost history showed ends the loss, as a write
		// above the reads does where a head probe reads (corpus seed
		// 371240: informers that listed after the restore stayed
		// ahead_of_head for good)
		s.lostWrite = 0
	}
	return false
}

// OwnWrite records a write to source id's resource (a canary's), requested
// at sent, that committed at rv, against the source's own reads: one that
// landed below a read of theirs answered before it was sent shows their
// reads to come from a watch cache frozen in a history etcd lost, and
// their contradictions of the reference count for nothing until a write
// lands above them again (simulation seed 2400492: a second canary's
// resource whose cache stayed frozen after a restore was found foreign,
// moved to a space of its own headed by that cache, and its canary's next
// write counted the restore again).
func (s *Space) OwnWrite(id int32, rv uint64, sent time.Time) {
	o, ok := s.own[id]
	switch {
	case !ok || !o.recv.Before(sent):
	case rv < o.rv:
		s.lostReads[id] = true
	case rv > o.rv:
		delete(s.lostReads, id)
	}
}

// headless reports whether nothing ever read the space's head: no head
// probe nor freshness read answered (a monitor whose Start never runs).
func (s *Space) headless() bool { return !s.integers }

// SameHistoryAt returns until when a cache at rv, observed at seen in
// epoch, was of etcd's history: the request time of the latest write of
// that epoch that landed at or above rv, or, when a regression ended the
// epoch, of its latest write that shared rv's history (the restore came
// after that write committed; a proof of any instant before the restore
// holds in the history etcd kept), unsure ones left out. A write sent
// after seen that landed below rv did not share it: in one history a
// write commits above everything observed before it was sent, so it was
// of the new history (etcd restored: the new one reuses the lost one's
// revisions), and neither did any write sent after it, whatever its
// revision (the new history may pass rv). A write of a later epoch says
// nothing of the history left behind.
func (s *Space) SameHistoryAt(rv uint64, seen time.Time, epoch uint64) time.Time {
	below := s.FirstWriteBelow(rv, seen)
	shares := func(w write) bool {
		return (w.rv >= rv || !w.sent.After(seen)) && (below.IsZero() || w.sent.Before(below))
	}
	if epoch < s.epoch {
		var at time.Time
		for w := range s.knownWrites {
			if w.epoch == epoch && !w.unsure && shares(w) {
				at = maxTime(at, w.sent)
			}
		}
		return at
	}
	var at time.Time
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if w.epoch == epoch && w.rv >= rv && shares(w) {
			at = maxTime(at, w.sent)
		}
	}
	return at
}

// FirstWriteBelow returns the request time of the first write sent after
// seen that landed below rv (zero: none in the ring): a cache at rv,
// observed at seen, was of another history than etcd's by its answer.
func (s *Space) FirstWriteBelow(rv uint64, seen time.Time) time.Time {
	var first time.Time
	for w := range s.knownWrites {
		if w.sent.After(seen) && w.rv < rv && (first.IsZero() || w.sent.Before(first)) {
			first = w.sent
		}
	}
	return first
}

// knownWrites yields the writes in the ring and those the latest ended
// epochs kept (a write may come twice).
func (s *Space) knownWrites(yield func(write) bool) {
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if !yield(w) {
			return
		}
	}
	for _, w := range s.endedWrites {
		if !yield(w) {
			return
		}
	}
}

// WritesBelow returns how many writes requested after after landed below
// rv: a cache at rv seen before after is of another history when there are
// any (a write commits after it is requested).
func (s *Space) WritesBelow(rv uint64, after time.Time) int {
	n := 0
	for _, w := range s.writes[:min(s.nWrites, len(s.writes))] {
		if w.sent.After(after) && w.rv < rv {
			n++
		}
	}
	return n
}

// GapSince reports whether the head was unknown (no head probe answered
// for UnknownAfter) at some point after t, or is at now.
func (s *Space) GapSince(t, now time.Time) bool {
	age, ok := s.HeadAge(now)
	return s.gapEnded.After(t) || !ok || age > s.UnknownAfter()
}

// HistoryLost reports whether writes proved the reads to come from a
// history etcd lost (read samples then prove no cache fresh), and since
// when.
func (s *Space) HistoryLost() (bool, time.Time) { return s.lostWrite != 0, s.lostAt }

// ListedLost reports whether a list at rv, completed while writes land
// below the reads, is of the history etcd lost: at the head its reads
// stood at when a write proved the loss. A watch cache that kept the lost
// history answers at its frozen RV, and once etcd's new history passes it,
// follows on from there, holding the lost history's objects below it; a
// list of the new history lands on that RV only by chance. A write after
// such a list that lands above its RV shows nothing: etcd may have passed
// the frozen RV since (simulation seed 3408720). Reads since the proof
// may be of the new history already (API servers restarted: seed 3703713,
// whose relists at the latest such read stayed ahead of the head for
// good); a list at another RV is judged by the writes after it
// (Proof.lossListContradicted).
func (s *Space) ListedLost(rv uint64) bool {
	return s.lostWrite != 0 && !s.ended.recv.IsZero() && rv == s.ended.head
}

// OfNewHistory reports whether a list completed at at with RV rv, in the
// epoch before the current one, was of the history the space went back to:
// completed after the old history's latest sample, below its head.
func (s *Space) OfNewHistory(at time.Time, rv uint64) bool {
	return !s.ended.recv.IsZero() && at.After(s.ended.recv) && rv < s.ended.head
}

// Epoch counts the restores the space went through: an RV observed in an
// earlier epoch belongs to a lost history.
func (s *Space) Epoch() uint64 { return s.epoch }

// Opaque reports whether the reference answers with resource versions that
// are not integers.
func (s *Space) Opaque() bool { return s.opaque }

// HeadAge returns how long ago the latest head probe that answered was
// requested. Freshness reads are head samples too, but they are sparse (one
// per quiet informer per bookmark period) and ride the informers'
// connection: when the head probe fails, the head is unknown.
func (s *Space) HeadAge(now time.Time) (time.Duration, bool) {
	if s.lastProbe.IsZero() || s.opaque {
		return 0, false
	}
	return now.Sub(s.lastProbe), true
}

// Head returns the latest head the reference saw (or, before it answered,
// any source), and when it was answered: the head RV lag is measured from.
// A provisional sample of another source (which may turn out foreign) is
// not the head.
func (s *Space) Head() (rv uint64, recv time.Time, ok bool) {
	return s.refHead, s.refRecv, s.refOK
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
