package sim

// queueInvariant implements the docs/simulation.md row "informer queue": the
// queue between a watch and its store shows what waits to be applied, and the
// informer RV counts only what the store applied (docs/how-it-measures.md:
// informer queue).
//
// Rules: "queue depth below the truth" (the depth at least what waits,
// within 1/16 + 2: pairwise merging's resolution), "informer RV ahead
// of the store" (while events wait, the informer RV not above what the
// store applied) and "queue depth above the truth" (a resource whose every
// store applies at once has at most queueSlack waiting, whatever the load
// and whatever the monitor's lifecycle: a library user may never call
// Start). No waiver: the exporter's own ring counts every delta.
type queueInvariant struct{}

// queueSlack is how many deltas may wait in a fast store's queue at a
// scrape: the bookmarks and list ends its store applied in the last second,
// which the monitor drains once a second (events are counted off as their
// handlers are told).
const queueSlack = 4

func (queueInvariant) row() string { return "informer queue" }

func (queueInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	for _, it := range v.truth.Informers {
		if it.Pending > 0 && sig.QueueDepth < float64(it.Pending-it.Pending/16-2) {
			c.fail(v, "queue depth below the truth", "queue depth %.0f, but %d events wait for the store", sig.QueueDepth, it.Pending)
		}
		if it.Pending > 0 && sig.InformerRVOK && uint64(sig.InformerRV) > it.AppliedRV && it.AppliedRV > 0 {
			c.fail(v, "informer RV ahead of the store", "informer RV %.0f, but the store applied up to %d (%d events wait)", sig.InformerRV, it.AppliedRV, it.Pending)
		}
	}
	for _, in := range v.r.Informers {
		if in.SlowStore > 0 {
			return // its truth is InformerTruth.Pending, judged above
		}
	}
	if sig.QueueDepth > queueSlack {
		c.fail(v, "queue depth above the truth", "queue depth %.0f, but every store of it applies at once", sig.QueueDepth)
	}
}
