package e2e

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// canaryDeadline is the stack's canary deadline (a chart value, beside
// probeInterval and canaryInterval): the exporter counts a canary not
// delivered within it as lost, and the ground truth its own writes.
const canaryDeadline = 30 * time.Second

// truth is the test's own measurement of what the API server serves, taken
// beside the exporter on connections of its own and with none of its code:
// consistent Lists like the exporter's head probe, timed writes of its own
// canary object seen through its own informer of configmaps (the resource
// the exporter's canary uses), and that informer's watch starts, watch
// errors and relists. The scenarios judge the exporter against it.
type truth struct {
	mu         sync.Mutex
	lists      []timedCall
	writes     []*truthWrite
	deliveries []delivery // of the canary objects, in watch (= RV) order
	reached    []delivery // each time the informer first reached a higher RV (any configmap)
	synced     bool
	counts     informerCounts
}

// timedCall is one request: when it was sent, how long it took, its error.
type timedCall struct {
	at  time.Time
	d   time.Duration
	err error
	rv  uint64 // of a List's answer
}

// truthWrite is one write of the truth canary.
type truthWrite struct {
	sent  time.Time
	acked time.Time // when its answer arrived
	rv    uint64    // 0 until it answered, or when it failed
	err   error
}

type delivery struct {
	rv uint64
	at time.Time
}

// informerCounts are what an informer saw: watches started (not counting
// watch-lists), errors its reflector reported (a failed watch call or an
// error that ended a watch), and full lists (List or watch-list) after the
// first.
type informerCounts struct {
	watches, watchErrors, relists int
}

// counters returns the informer's counts; the initial list is no relist.
func (g *truth) counters() informerCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.counts
	c.relists--
	return c
}

// listLatencies summarizes the Lists sent in [from, to).
func (g *truth) listLatencies(from, to time.Time) latencies {
	g.mu.Lock()
	defer g.mu.Unlock()
	return summarize(g.lists, from, to)
}

// errLost marks a write not delivered within the canary deadline.
var errLost = errors.New("not delivered within the canary deadline")

// summarize summarizes the calls sent in [from, to).
func summarize(calls []timedCall, from, to time.Time) latencies {
	var l latencies
	for _, c := range calls {
		switch {
		case !within(c.at, from, to):
		case errors.Is(c.err, errLost):
			l.lost++
		case c.err != nil:
			l.errors++
		default:
			l.observe(c.d.Seconds())
		}
	}
	return l
}

// errors counts the distinct errors of the Lists and writes sent in
// [from, to), for the log: what a client of the API server was told.
func (g *truth) errors(from, to time.Time) map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]int{}
	add := func(at time.Time, err error) {
		if err != nil && within(at, from, to) {
			seen[err.Error()]++
		}
	}
	for _, c := range g.lists {
		add(c.at, c.err)
	}
	for _, w := range g.writes {
		add(w.sent, w.err)
	}
	return seen
}

// within reports whether at lies in [from, to).
func within(at, from, to time.Time) bool { return !at.Before(from) && at.Before(to) }

// deliveredAt returns when the informer first delivered the canary object
// at or past rv.
func (g *truth) deliveredAt(rv uint64) (time.Time, bool) { return firstAtLeast(g.deliveries, rv) }

// firstAtLeast returns the time of the first of ds (in RV order) at or past
// rv.
func firstAtLeast(ds []delivery, rv uint64) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(ds, rv, func(d delivery, rv uint64) int {
		switch {
		case d.rv < rv:
			return -1
		case d.rv > rv:
			return 1
		}
		return 0
	})
	if i == len(ds) {
		return time.Time{}, false
	}
	return ds[i].at, true
}

// canaryLatencies summarizes the writes sent in [from, to), as the
// exporter's canary measures its own: the time from sending each write to
// its delivery, failed writes as errors, and writes not delivered within the
// canary deadline as lost. Writes still pending at to are left out.
func (g *truth) canaryLatencies(from, to time.Time) latencies {
	g.mu.Lock()
	defer g.mu.Unlock()
	var calls []timedCall
	for _, w := range g.writes {
		c := timedCall{at: w.sent, err: w.err}
		at, delivered := g.deliveredAt(w.rv)
		switch {
		case w.err != nil:
		case w.rv != 0 && delivered:
			c.d = max(0, at.Sub(w.sent))
		case to.Sub(w.sent) > canaryDeadline:
			c.err = errLost
		default:
			continue // pending
		}
		calls = append(calls, c)
	}
	return summarize(calls, from, to)
}

// staleness is the largest staleness over [from, to] that the truth
// proves, as a range: at any time, the age of the newest instant as of which
// the cache is known to have held everything committed. Staleness rises
// until a proof arrives, so its maxima lie just before proofs and at the end
// of the window.
//
// high is proven by the truth canary alone: a delivered write proves the
// cache fresh as of its sending (it committed later). low also takes each
// write's latest possible commit, min(acked, delivered), and the truth's
// Lists as the exporter takes its head probes: a consistent List sent at s
// that answered RV r proves the cache fresh as of s once the informer
// reached r. In an etcd election the two differ by seconds: writes wait
// until the election ends while a List sent in it answers the old head,
// which the informer already holds.
type staleness struct{ low, high time.Duration }

// proof says that, from at on, the cache is known fresh as of fresh.
type proof struct{ at, fresh time.Time }

func (g *truth) staleness(from, to time.Time) staleness {
	g.mu.Lock()
	defer g.mu.Unlock()
	var early, late []proof
	for _, w := range g.writes {
		if w.rv == 0 {
			continue
		}
		if at, ok := g.deliveredAt(w.rv); ok {
			late = append(late, proof{at: at, fresh: w.sent})
			committed := at
			if w.acked.Before(committed) {
				committed = w.acked
			}
			early = append(early, proof{at: at, fresh: committed})
		}
	}
	for _, c := range g.lists {
		if c.err != nil {
			continue
		}
		if at, ok := firstAtLeast(g.reached, c.rv); ok {
			early = append(early, proof{at: later(at, c.at.Add(c.d)), fresh: c.at})
		}
	}
	return staleness{low: worstStaleness(early, from, to), high: worstStaleness(late, from, to)}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// worstStaleness is the largest staleness over [from, to] that proofs
// leave.
func worstStaleness(proofs []proof, from, to time.Time) time.Duration {
	slices.SortFunc(proofs, func(a, b proof) int { return a.at.Compare(b.at) })
	var fresh time.Time
	var worst time.Duration
	for _, p := range proofs {
		if p.at.After(to) {
			break
		}
		if p.at.After(from) && !fresh.IsZero() {
			worst = max(worst, p.at.Sub(fresh))
		}
		if p.fresh.After(fresh) {
			fresh = p.fresh
		}
	}
	if !fresh.IsZero() {
		worst = max(worst, to.Sub(fresh))
	}
	return worst
}

// sustainedList is the longest wait that every List the truth sent within
// some stretch of length span of [from, to) went through: the shortest
// duration among the Lists sent in the stretch, maximized over stretches.
// A request sampler that sends at least once per span (the exporter's head
// probe) sent one of its own into that stretch and waited as long, where
// a single slow List of the truth (one caught in a retry) proves nothing
// about the sampler. Failed Lists are left out.
func (g *truth) sustainedList(from, to time.Time, span time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var calls []timedCall
	for _, c := range g.lists {
		if c.err == nil && within(c.at, from, to) {
			calls = append(calls, c)
		}
	}
	slices.SortFunc(calls, func(a, b timedCall) int { return a.at.Compare(b.at) })
	var best time.Duration
	for i, c := range calls {
		if c.at.Add(span).After(to) {
			break // the stretch would reach past the window
		}
		shortest := c.d
		for _, o := range calls[i+1:] {
			if o.at.After(c.at.Add(span)) {
				break
			}
			shortest = min(shortest, o.d)
		}
		best = max(best, shortest)
	}
	return best
}

// latencies summarizes the durations of one kind of request in a window,
// from the ground truth's samples or from a delta of the exporter's
// histogram.
type latencies struct {
	n      int     // successful observations
	sum    float64 // seconds
	slow   int     // observations above slowSeconds
	errors int     // failed requests
	lost   int     // writes not delivered within the canary deadline
	// The largest observation lies in [maxFloor, max]: exact for the
	// ground truth, its bucket's bounds for a histogram.
	maxFloor, max float64
}

// slowSeconds is the bound above which an observation counts as slow: a
// bucket bound of both the List-duration and the canary-latency histograms.
const slowSeconds = 1.0

func (l *latencies) observe(s float64) {
	l.n++
	l.sum += s
	l.max = max(l.max, s)
	l.maxFloor = l.max
	if s > slowSeconds {
		l.slow++
	}
}

func (l latencies) mean() float64 {
	if l.n == 0 {
		return 0
	}
	return l.sum / float64(l.n)
}

// attempts counts every request: observed, failed or lost.
func (l latencies) attempts() int { return l.n + l.errors + l.lost }

// degraded is the fraction of requests that were slow, failed or lost: a
// write slower than the exporter's canary write timeout is a failed write
// to the exporter and a slow one to the truth, so only the sum compares.
func (l latencies) degraded() float64 {
	if l.attempts() == 0 {
		return 0
	}
	return float64(l.slow+l.errors+l.lost) / float64(l.attempts())
}

func (l latencies) String() string {
	return fmt.Sprintf("n=%d mean=%.3fs max=%.3gs slow(>%gs)=%d failed=%d lost=%d: degraded %.1f%%",
		l.n, l.mean(), l.max, slowSeconds, l.slow, l.errors, l.lost, 100*l.degraded())
}
