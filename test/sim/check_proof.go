package sim

import (
	"cmp"
	"time"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

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
	if sig.ProofOK && c.sawtoothBounded() && c.quiet(v.s.At, 5*time.Minute) && !c.unseenRestoreLearned(v) && !c.stuckLearned(v) && time.Duration(sig.ProofPeriod*float64(time.Second)) > healthyProof {
		c.fail(v, "proof period above the healthy sawtooth", "freshness proof period %.0fs > %s, the most a healthy resource's sawtooth reaches here", sig.ProofPeriod, healthyProof)
	}
}

// unseenRestoreLearned reports whether the proof period of v's resource
// may hold a restore's sawtooth: an informer of it that learns its period
// from the sawtooth of the last 30 minutes (see learnsPeriod) takes a
// restore the monitor could not see (a watch cache of the lost history
// frozen above the head, its bookmarks arriving on time, the head probe
// answered by such caches) for a healthy sawtooth. docs/simulation.md:
// freshness proof period, "for 30 min after a restore the exporter could
// not see".
func (c *Checker) unseenRestoreLearned(v *resourceAt) bool {
	if !c.learnsPeriod(v) {
		return false
	}
	now := v.s.At
	for _, f := range c.h.Faults {
		at := c.start.Add(f.Start)
		if f.Kind == Restore && !at.After(now) && now.Sub(at) < 30*time.Minute && c.blind(now, at, cmp.Or(f.Etcd, model.MainEtcd)) {
			return true
		}
	}
	return false
}

// stuckLearned reports whether the proof period of v's resource may hold
// the sawtooth of a watch cache that was stuck: a cache that stopped
// following etcd still sends bookmarks at its old RV, which an informer
// that learns its period (see learnsPeriod) takes for a quiet cache's,
// and keeps for the proof period's memory (30 min) after the cache moves
// again; so do the caches of an API server cut off etcd. docs/simulation.md:
// freshness proof period, "for 30 min after a stuck watch cache".
func (c *Checker) stuckLearned(v *resourceAt) bool {
	if !c.learnsPeriod(v) {
		return false
	}
	since := v.s.At.Sub(c.start)
	for _, f := range c.h.Faults {
		// the peak is learned at the first bookmark after the cache
		// moves again: up to a bookmark period and its slack later
		stuck := f.Kind == Stuck && f.Resource == v.name || f.Kind == Cutoff // (every cache of its server)
		if stuck && f.Start <= since && since < f.End()+30*time.Minute+2*time.Minute {
			return true
		}
	}
	return false
}

// learnsPeriod reports whether an informer of v's resource learns its
// proof period from its sawtooth, because no read of its own is known to
// reach its watch's server: an operator's informer (Instrument: the
// monitor cannot see its connection's protocol), every informer on
// HTTP/1.1 (behind one API server too: the monitor cannot tell how many
// a pool's connections reach; seed 372190), and every one with the reads
// off.
func (c *Checker) learnsPeriod(v *resourceAt) bool {
	learns := c.h.readsUncounted()
	for _, in := range v.r.Informers {
		learns = learns || in.Embedded
	}
	return learns
}
