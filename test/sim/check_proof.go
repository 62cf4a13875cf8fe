package sim

import "time"

// proofPeriodInvariant implements the docs/simulation.md row "freshness proof
// period": 5 minutes after the last fault, the proof period is the
// healthy sawtooth's height (at most healthyProof), not an incident's.
//
// Rule: "proof period above the healthy sawtooth". Waivers:
// sawtoothBounded (no healthy height to hold it to), unseenRestoreLearned
// and stuckLearned.
type proofPeriodInvariant struct{}

func (proofPeriodInvariant) row() string { return "freshness proof period" }

func (proofPeriodInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	if sig.ProofOK && c.sawtoothBounded() && c.quiet(v.s.At, 5*time.Minute) && !c.unseenRestoreLearned(v.s.At) && !c.stuckLearned(v) && time.Duration(sig.ProofPeriod*float64(time.Second)) > healthyProof {
		c.fail(v, "proof period above the healthy sawtooth", "freshness proof period %.0fs > %s, the most a healthy resource's sawtooth reaches here", sig.ProofPeriod, healthyProof)
	}
}

// unseenRestoreLearned reports whether the proof period may hold a restore's
// sawtooth: with the freshness reads off it is learned from the sawtooth of
// the last 30 minutes, and a restore the monitor could not see (a watch cache
// of the lost history frozen above the head, its bookmarks arriving on time)
// looks like a healthy one to it. docs/simulation.md: freshness proof period,
// "waived for 30 min after a restore the exporter could not see".
func (c *Checker) unseenRestoreLearned(now time.Time) bool {
	if !c.h.Setup.NoFreshnessReads {
		return false
	}
	for _, f := range c.h.Faults {
		at := c.start.Add(f.Start)
		if f.Kind == Restore && !at.After(now) && now.Sub(at) < 30*time.Minute && c.blind(now, at) {
			return true
		}
	}
	return false
}

// stuckLearned reports whether the proof period of v's resource may hold
// the sawtooth of a watch cache that was stuck: a cache that stopped
// following etcd still sends bookmarks at its old RV, which an informer
// tells from a quiet cache's only by a read it knows reached that cache
// (one on its own connection, over HTTP/2). An informer of the operator's
// own (Instrument: the monitor cannot see its connection's protocol),
// every informer on HTTP/1.1 behind several API servers, and every one
// with the reads off learn the stuck sawtooth as healthy and keep it for
// the proof period's memory (30 min) after the cache moves again.
// docs/simulation.md: freshness proof period, "for 30 min after a stuck
// watch cache".
func (c *Checker) stuckLearned(v *resourceAt) bool {
	blind := c.readsElsewhere()
	for _, in := range v.r.Informers {
		blind = blind || in.Embedded
	}
	if !blind {
		return false
	}
	since := v.s.At.Sub(c.start)
	for _, f := range c.h.Faults {
		// the peak is learned at the first bookmark after the cache
		// moves again: up to a bookmark period and its slack later
		if f.Kind == Stuck && f.Resource == v.name && f.Start <= since && since < f.End()+30*time.Minute+2*time.Minute {
			return true
		}
	}
	return false
}
