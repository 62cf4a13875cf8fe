package sim

import "time"

// healthyStalenessInvariant implements the docs/simulation.md row "cache
// staleness, healthy": once every watch of a resource was live for 2 minutes
// with bookmarks and no fault, its staleness is never more than healthyProof
// (80 s) above the truth. It also records the largest excess seen
// (Checker.Excess), which calibrates healthyProof.
//
// Rule: "healthy staleness above the truth". Waivers: sawtoothBounded
// (with the freshness reads off, a quiet cache is proven fresh only by
// etcd's progress notifications), afterLoss and listedTainted (a store
// that may hold a lost history's objects over-estimates until it lists).
type healthyStalenessInvariant struct{}

func (healthyStalenessInvariant) row() string { return "cache staleness, healthy" }

func (healthyStalenessInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	healthy := v.allLive && c.quiet(v.s.At, 2*time.Minute) && v.liveFor >= 2*time.Minute && v.allBookmarks
	if !healthy || !c.sawtoothBounded() || afterLoss(v) || v.listedTainted || !sig.StalenessOK {
		return
	}
	excess := time.Duration(sig.Staleness*float64(time.Second)) - v.truthStale
	c.Excess = max(c.Excess, excess)
	if excess > healthyProof {
		c.fail(v, "healthy staleness above the truth", "staleness %.1fs, truth %.1fs: %.1fs above (tolerance %s)", sig.Staleness, v.truthStale.Seconds(), excess.Seconds(), healthyProof)
	}
}
