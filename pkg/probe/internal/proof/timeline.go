package proof

import "time"

// run is a run of head samples that returned the same resource version.
// Each sample is a request (sent) and its response (received); the RV it
// returns was the head at some instant between the two. So the run proves
// two bounds: everything committed by lastSent has an RV <= rv (the last
// sample's snapshot came after its request), and a commit of rv happened
// before firstRecv (the first sample that saw it had its answer by then).
type run struct {
	rv        uint64
	firstRecv time.Duration // since the timeline's base, monotonic
	lastSent  time.Duration
	lastRecv  time.Duration
	samples   int
	// provisional: every sample of the run came from a source that was not
	// its space's reference when it answered
	provisional bool
}

// Timeline is a bounded history of head samples of one RV space. RVs in it
// never decrease: its space resets it when the head provably went back
// (etcd restored from a backup). Samples that see the same head share one
// entry, so a quiet cluster uses one slot however long it is quiet. When
// full, the oldest entry is dropped and counted.
//
// It answers the questions the proofs ask:
//   - FreshAtSeen(rv, seen): the latest request time of a sample whose
//     head was <= rv (and that did not contradict rv, seen at seen): a
//     cache at rv provably held everything committed by then;
//   - CommitBound(rv): the response time of the first sample whose head
//     was >= rv, an upper bound of rv's commit time;
//   - Below(rv, after): how many samples requested after a time saw a
//     head below rv (an RV of another history when there are any).
type Timeline struct {
	base    time.Time
	buf     []run
	start   int // index of the oldest entry in buf
	n       int // entries in use
	adds    uint64
	dropped uint64
}

// NewTimeline returns a timeline holding at most capacity runs of equal
// heads; base is any time before the first sample (monotonic readings of
// time.Time are kept, so wall-clock jumps do not distort it).
func NewTimeline(capacity int, base time.Time) *Timeline {
	return &Timeline{base: base, buf: make([]run, max(capacity, 2))}
}

func (tl *Timeline) at(i int) *run { return &tl.buf[(tl.start+i)%len(tl.buf)] }

// Add records a sample of source, requested at sent and answered at recv,
// that saw head rv. A head below the latest is ignored: the space decides
// what a lower head means before it adds a sample.
func (tl *Timeline) Add(sent, recv time.Time, rv uint64) {
	tl.add(sent, recv, rv, false)
}

// AddProvisional records a sample of a source that is not its space's
// reference: the reference may contradict it later (see
// ProvisionalAbove).
func (tl *Timeline) AddProvisional(sent, recv time.Time, rv uint64) {
	tl.add(sent, recv, rv, true)
}

func (tl *Timeline) add(sent, recv time.Time, rv uint64, provisional bool) {
	s, r := sent.Sub(tl.base), recv.Sub(tl.base)
	tl.adds++
	if tl.n > 0 {
		last := tl.at(tl.n - 1)
		switch {
		case rv == last.rv:
			last.lastSent, last.lastRecv = max(last.lastSent, s), max(last.lastRecv, r)
			last.samples++
			last.provisional = last.provisional && provisional
			return
		case rv < last.rv:
			return
		}
	}
	if tl.n == len(tl.buf) {
		tl.start = (tl.start + 1) % len(tl.buf)
		tl.n--
		tl.dropped++
	}
	*tl.at(tl.n) = run{rv: rv, firstRecv: r, lastSent: s, lastRecv: r, samples: 1, provisional: provisional}
	tl.n++
}

// Reset discards the history: the head went back.
func (tl *Timeline) Reset() { tl.start, tl.n = 0, 0 }

// Clone returns a copy of the timeline.
func (tl *Timeline) Clone() *Timeline {
	c := *tl
	c.buf = append([]run(nil), tl.buf...)
	return &c
}

// Latest returns the newest head and when a sample last answered with it.
func (tl *Timeline) Latest() (rv uint64, recv time.Time, ok bool) {
	if tl.n == 0 {
		return 0, time.Time{}, false
	}
	s := tl.at(tl.n - 1)
	return s.rv, tl.base.Add(s.lastRecv), true
}

// LatestConfirmed returns the newest head a sample of the space's
// reference saw (not only other sources), and when it last answered.
func (tl *Timeline) LatestConfirmed() (rv uint64, recv time.Time, ok bool) {
	for i := tl.n - 1; i >= 0; i-- {
		if s := tl.at(i); !s.provisional {
			return s.rv, tl.base.Add(s.lastRecv), true
		}
	}
	return 0, time.Time{}, false
}

// Generation counts the samples added so far; it moves with every sample.
func (tl *Timeline) Generation() uint64 { return tl.adds }

// Dropped returns how many entries were dropped because the timeline was
// full.
func (tl *Timeline) Dropped() uint64 { return tl.dropped }

// HeadBy returns the newest head a sample of the space's reference had
// answered by t, and when it first did: what a request sent at t could be
// behind. A head first answered after t may be newer than anything such a
// request saw.
func (tl *Timeline) HeadBy(t time.Time) (rv uint64, recv time.Time, ok bool) {
	a := t.Sub(tl.base)
	for i := tl.search(func(s *run) bool { return s.firstRecv > a }) - 1; i >= 0; i-- {
		if s := tl.at(i); !s.provisional {
			return s.rv, tl.base.Add(s.firstRecv), true
		}
	}
	return 0, time.Time{}, false
}

// FreshAtSeen returns the latest request time of a sample whose head was
// <= rv, for an RV a cache reached at seen: a cache at rv provably held
// everything committed by then. A sample requested after seen that saw
// less than rv contradicts it (in one history a read after rv existed sees
// at least rv) and proves nothing.
func (tl *Timeline) FreshAtSeen(rv uint64, seen time.Time) (time.Time, bool) {
	a := seen.Sub(tl.base)
	for i := tl.search(func(s *run) bool { return s.rv > rv }) - 1; i >= 0; i-- {
		if s := tl.at(i); s.rv == rv || s.lastSent <= a {
			return tl.base.Add(s.lastSent), true
		}
	}
	return time.Time{}, false
}

// CommitBound returns the response time of the first sample whose head was
// >= rv, and the request time of the sample before it (zero at the start
// of the history): rv was committed between the two. A wide gap (the
// probes were failing) leaves the commit time, and so any delay, unknown.
func (tl *Timeline) CommitBound(rv uint64) (bound, after time.Time, ok bool) {
	i := tl.search(func(s *run) bool { return s.rv >= rv })
	if i == tl.n {
		return time.Time{}, time.Time{}, false
	}
	if i > 0 {
		after = tl.base.Add(tl.at(i - 1).lastSent)
	}
	return tl.base.Add(tl.at(i).firstRecv), after, true
}

// Below returns how many samples requested after after saw a head below
// rv. One etcd's revision never decreases, so a cache at rv (seen before
// after) is of another history than these samples' when there are any.
// Other sources' samples (provisional) that the reference answered at or
// above rv after do not count: its consistent read of the space's etcd
// shows them of another etcd, or of a cache behind it, not rv of another
// history (simulation seed 4057703: the main etcd's resources, listed in
// the instant after a store of events on an etcd of their own, held it
// ahead of the head for good).
func (tl *Timeline) Below(rv uint64, after time.Time) int {
	a := after.Sub(tl.base)
	n := 0
	answeredAbove := false // by the reference, after the runs still to walk
	for i := tl.n - 1; i >= 0; i-- {
		s := tl.at(i)
		if s.lastSent <= a {
			break
		}
		if s.rv < rv && !(s.provisional && answeredAbove) {
			n += s.samples
		}
		answeredAbove = answeredAbove || !s.provisional && s.rv >= rv
	}
	return n
}

// ProvisionalAbove reports whether every head above rv is provisional
// (none came from the reference); ok is false when there are none.
func (tl *Timeline) ProvisionalAbove(rv uint64) (provisional, ok bool) {
	i := tl.search(func(s *run) bool { return s.rv > rv })
	if i == tl.n {
		return false, false
	}
	provisional = true
	for j := i; j < tl.n; j++ {
		provisional = provisional && tl.at(j).provisional
	}
	return provisional, true
}

// TruncateAbove drops every head above rv.
func (tl *Timeline) TruncateAbove(rv uint64) {
	tl.n = tl.search(func(s *run) bool { return s.rv > rv })
}

// search returns the smallest index in [0, n) for which pred holds, or n;
// pred must be monotonic in the index (false…false true…true).
func (tl *Timeline) search(pred func(*run) bool) int {
	lo, hi := 0, tl.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if pred(tl.at(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
