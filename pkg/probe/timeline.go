package probe

import (
	"sync"
	"time"
)

// sample is a run of head probes that returned the same RV. Each probe is
// a request (sent) and its response (received); the RV it returns was the
// head at some instant between the two. So the run proves two bounds:
// everything committed by lastSent has an RV <= rv (the last probe's
// snapshot came after its request), and a commit of rv happened before
// firstRecv (the first probe that saw it had its answer by then).
type sample struct {
	rv        uint64
	firstRecv time.Duration // since the timeline's base, monotonic
	lastSent  time.Duration
	lastRecv  time.Duration
	source    int32 // the head source of every probe of the run, or mixedSources
}

// mixedSources marks a run seen by more than one head source.
const mixedSources = -1

// timeline is a bounded history of head samples of one RV space. RVs in it
// never decrease: the space resets it when the head provably went backwards
// (etcd restored from a backup). Consecutive probes that see the same head
// share one entry, so a quiet cluster uses one slot however long it is
// quiet. When full, the oldest entry is dropped and counted.
//
// It answers the two questions the signals need:
//   - FreshAt(rv): the latest request time of a probe whose head was <= rv,
//     i.e. the cache at rv provably held everything committed by then;
//   - CommitBound(rv): the response time of the first probe whose head was
//     >= rv, an upper bound of rv's commit time.
type timeline struct {
	mu      sync.RWMutex
	base    time.Time
	buf     []sample
	start   int // index of the oldest entry in buf
	n       int // entries in use
	adds    uint64
	dropped uint64
}

// newTimeline returns a timeline holding at most capacity runs of equal
// heads; base is any time before the first sample (monotonic readings of
// time.Time are kept, so wall-clock jumps do not distort it).
func newTimeline(capacity int, base time.Time) *timeline {
	if capacity < 2 {
		capacity = 2
	}
	return &timeline{base: base, buf: make([]sample, capacity)}
}

func (tl *timeline) at(i int) *sample { return &tl.buf[(tl.start+i)%len(tl.buf)] }

// add records a probe sent at sent, answered at recv with head rv, by head
// source source. An rv below the latest is ignored: the space decides what
// a lower head means (a probe that started before the latest one answered,
// a resource of another etcd, or a restore, after which it calls reset).
func (tl *timeline) add(sent, recv time.Time, rv uint64, source int32) {
	s, r := sent.Sub(tl.base), recv.Sub(tl.base)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.adds++
	if tl.n > 0 {
		last := tl.at(tl.n - 1)
		switch {
		case rv == last.rv:
			last.lastSent, last.lastRecv = max(last.lastSent, s), max(last.lastRecv, r)
			if last.source != source {
				last.source = mixedSources
			}
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
	*tl.at(tl.n) = sample{rv: rv, firstRecv: r, lastSent: s, lastRecv: r, source: source}
	tl.n++
}

// reset discards the history: the head went backwards.
func (tl *timeline) reset() {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.start, tl.n = 0, 0
}

// latest returns the newest head and when a probe last answered with it.
func (tl *timeline) latest() (rv uint64, recv time.Time, ok bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	if tl.n == 0 {
		return 0, time.Time{}, false
	}
	s := tl.at(tl.n - 1)
	return s.rv, tl.base.Add(s.lastRecv), true
}

// generation counts the samples added so far; it moves with every probe.
func (tl *timeline) generation() uint64 {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	return tl.adds
}

// freshAt returns the latest request time of a probe whose head was <= rv.
func (tl *timeline) freshAt(rv uint64) (time.Time, bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	// first index whose rv > given rv; the one before it is the answer.
	i := tl.search(func(s *sample) bool { return s.rv > rv })
	if i == 0 {
		return time.Time{}, false
	}
	return tl.base.Add(tl.at(i - 1).lastSent), true
}

// commitBound returns the response time of the first probe whose head was
// >= rv, and the request time of the probe before it (zero at the start of
// the history): rv was committed between the two. A wide gap (the probes
// were failing) leaves the commit time, and so any delay, unknown.
func (tl *timeline) commitBound(rv uint64) (bound, after time.Time, ok bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	i := tl.search(func(s *sample) bool { return s.rv >= rv })
	if i == tl.n {
		return time.Time{}, time.Time{}, false
	}
	if i > 0 {
		after = tl.base.Add(tl.at(i - 1).lastSent)
	}
	return tl.base.Add(tl.at(i).firstRecv), after, true
}

// soleSourceAbove reports the one head source that saw every head above rv,
// if one source alone did.
func (tl *timeline) soleSourceAbove(rv uint64) (int32, bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	i := tl.search(func(s *sample) bool { return s.rv > rv })
	if i == tl.n {
		return 0, false
	}
	src := tl.at(i).source
	for j := i; j < tl.n; j++ {
		if s := tl.at(j).source; s != src || s == mixedSources {
			return 0, false
		}
	}
	return src, true
}

// truncateAbove drops every head above rv.
func (tl *timeline) truncateAbove(rv uint64) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.n = tl.search(func(s *sample) bool { return s.rv > rv })
}

// droppedCount returns how many entries were dropped because the timeline was full.
func (tl *timeline) droppedCount() uint64 {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	return tl.dropped
}

// search returns the smallest index in [0, n) for which pred holds, or n;
// pred must be monotonic in the index (false…false true…true). Callers hold mu.
func (tl *timeline) search(pred func(*sample) bool) int {
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
