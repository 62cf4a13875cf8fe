package sim

import "time"

// proofPeriodInvariant implements the docs/simulation.md row "freshness proof
// period": 5 minutes after the last fault, the proof period is the
// healthy sawtooth's height (at most healthyProof), not an incident's.
//
// Rule: "proof period above the healthy sawtooth". Waivers:
// sawtoothBounded (no healthy height to hold it to) and
// unseenRestoreLearned.
type proofPeriodInvariant struct{}

func (proofPeriodInvariant) row() string { return "freshness proof period" }

func (proofPeriodInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	if sig.ProofOK && c.sawtoothBounded() && c.quiet(v.s.At, 5*time.Minute) && !c.unseenRestoreLearned(v.s.At) && time.Duration(sig.ProofPeriod*float64(time.Second)) > healthyProof {
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
