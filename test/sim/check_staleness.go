package sim

import "time"

// stalenessInvariant implements the docs/simulation.md row "cache staleness":
// the exporter never claims a freshness the truth contradicts (1 ms).
//
// Rule: "staleness below the truth". Waivers: slowStore (no truth to hold
// it to) and unseenLoss (a restore not seen yet: restoreUnseen,
// mixedHistories, listedFromTainted).
type stalenessInvariant struct{}

func (stalenessInvariant) row() string { return "cache staleness" }

func (stalenessInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	if !sig.StalenessOK || slowStore(v.r) {
		return
	}
	claimed := v.s.At.Add(-time.Duration(sig.Staleness * float64(time.Second)))
	if claimed.After(v.fresh.Add(time.Millisecond)) && !c.unseenLoss(v) {
		c.fail(v, "staleness below the truth", "staleness %.3fs, but the cache lacks a change committed %.3fs ago (%d missing)", sig.Staleness, v.truthStale.Seconds(), v.missing)
	}
}

// slowStore reports whether one of the exporter's own informers of r has a
// store slower than its watch: such a store holds digests, and what its
// connection delivered is not yet what it holds, so the model has no staleness
// truth for it (Informer.SlowStore); the queue invariant holds its backlog
// instead. docs/simulation.md: cache staleness, "for a store slower than its
// watch in the exporter's own informers".
func slowStore(r Watched) bool {
	slow := false
	for _, in := range r.Informers {
		slow = slow || (in.SlowStore > 0 && !in.Embedded)
	}
	return slow
}
