package probe

import (
	"sync"
	"time"
)

// sample is a run of head probes that returned the same RV: the RV was the
// head from first until (at least) last.
type sample struct {
	rv          uint64
	first, last time.Duration // since the timeline's base, monotonic
}

// timeline is a bounded history of (probe time, head RV) for one RV space.
// RVs in it never decrease: a head that goes backwards (etcd restored from a
// backup) resets it. Consecutive probes that see the same head share one
// entry, so a quiet cluster uses one slot however long it is quiet. When full,
// the oldest entry is dropped and counted.
//
// It answers the two questions the signals need:
//   - FreshAt(rv): the latest probe time at which the head was <= rv, i.e.
//     the cache at rv provably held everything committed by then;
//   - CommitBound(rv): the first probe time at which the head was >= rv, an
//     upper bound of rv's commit time.
type timeline struct {
	mu      sync.RWMutex
	base    time.Time
	buf     []sample
	start   int // index of the oldest entry in buf
	n       int // entries in use
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

// Add records a probe at t that returned head rv. It reports whether the head
// went backwards, in which case the history was discarded first.
func (tl *timeline) Add(t time.Time, rv uint64) (regressed bool) {
	d := t.Sub(tl.base)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.n > 0 {
		last := tl.at(tl.n - 1)
		switch {
		case rv == last.rv:
			if d > last.last {
				last.last = d
			}
			return false
		case rv < last.rv:
			tl.start, tl.n = 0, 0
			regressed = true
		}
	}
	if tl.n == len(tl.buf) {
		tl.start = (tl.start + 1) % len(tl.buf)
		tl.n--
		tl.dropped++
	}
	*tl.at(tl.n) = sample{rv: rv, first: d, last: d}
	tl.n++
	return regressed
}

// Latest returns the newest head and the time it was last seen.
func (tl *timeline) Latest() (rv uint64, at time.Time, ok bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	if tl.n == 0 {
		return 0, time.Time{}, false
	}
	s := tl.at(tl.n - 1)
	return s.rv, tl.base.Add(s.last), true
}

// FreshAt returns the latest probe time at which the head was <= rv.
func (tl *timeline) FreshAt(rv uint64) (time.Time, bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	// first index whose rv > given rv; the one before it is the answer.
	i := tl.search(func(s *sample) bool { return s.rv > rv })
	if i == 0 {
		return time.Time{}, false
	}
	return tl.base.Add(tl.at(i - 1).last), true
}

// CommitBound returns the first probe time at which the head was >= rv.
func (tl *timeline) CommitBound(rv uint64) (time.Time, bool) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	i := tl.search(func(s *sample) bool { return s.rv >= rv })
	if i == tl.n {
		return time.Time{}, false
	}
	return tl.base.Add(tl.at(i).first), true
}

// Dropped returns how many entries were dropped because the timeline was full.
func (tl *timeline) Dropped() uint64 {
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
