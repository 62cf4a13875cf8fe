package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// recoveryInvariant implements the docs/simulation.md row "recovery":
// recoverWithin (5 minutes) after the last fault ends, a served resource whose
// watches are all live and whose store misses nothing is back in the healthy
// range: its state expected (stateExpected), its staleness within healthyProof
// of the truth, its RV lag within lagSLO.
//
// Rule: "not recovered", naming what is not. Waivers: for staleness,
// sawtoothBounded, a watch without bookmarks, and afterLoss; for lag, a
// watch cache serving a lost history (CachesLost), measuredInLoss and
// unprovable, as for the RV lag row.
type recoveryInvariant struct{}

func (recoveryInvariant) row() string { return "recovery" }

func (recoveryInvariant) check(c *Checker, v *resourceAt) {
	sig, now := v.sig, v.s.At
	if !c.quiet(now, recoverWithin) || !c.faultsBefore(now) || !v.allLive || v.missing != 0 || !v.truth.Exists {
		return
	}
	var bad []string
	if !c.stateExpected(v) {
		bad = append(bad, "state "+sig.State)
	}
	if sig.StalenessOK && v.allBookmarks && c.sawtoothBounded() && !afterLoss(v) && time.Duration(sig.Staleness*float64(time.Second))-v.truthStale > healthyProof {
		bad = append(bad, fmt.Sprintf("staleness %.0fs (truth %.0fs)", sig.Staleness, v.truthStale.Seconds()))
	}
	if sig.LagOK && sig.Lag > lagSLO && !v.truth.CachesLost && !c.measuredInLoss(v) && !c.unprovable(v.r, now) {
		bad = append(bad, fmt.Sprintf("RV lag %.0f", sig.Lag))
	}
	if len(bad) > 0 {
		c.fail(v, "not recovered", "%s, %s after the last fault ended", strings.Join(bad, ", "), recoverWithin)
	}
}

// stateExpected reports whether v's state is one a recovered resource may
// show: ok; opaque_rv (non-integer RVs allow no RV math, fault or not);
// ahead_of_head for a store that has not listed since a restore or listed
// from a watch cache of the lost history (what it holds may be of that
// history, and a watch resuming above etcd's revision gets only the
// writes above it: docs/how-it-measures.md, RV regressions, "stays
// ahead_of_head until it lists again"); no_bookmarks while a watch of it
// gets none, or within the first bookmark's due time (a minute and 15 s)
// after every watch of it began to (a watch whose cache began to move
// past its start gets its first bookmark within a bookmark period);
// head_unknown in a world whose monitor never starts (Setup.NoStart: no
// head probe and no freshness read runs, so nothing answers for the head
// and the state says so), and while a watch cache of its etcd serves a
// lost history (lostHistory: the head its space reads may come from that
// history, and a resource whose reads move while that frozen head does
// not reads as one of another etcd, moved to a space of its own whose
// first head is still to come; corpus seed 374125); and in such a world, ahead_of_head for a
// resource whose configured space mixes etcds (only the head probe's
// check reads tell which etcd a resource reads, Monitor.checkSources, and
// the state's runbook names a resource on another etcd as its cause), and
// so in a still world too (see still).
// docs/simulation.md: recovery, "state `ok` (`stateExpected`: ...)".
func (c *Checker) stateExpected(v *resourceAt) bool {
	firstBookmark := v.s.At.Sub(c.bookmarksAt[v.name]) <= time.Minute+15*time.Second
	switch v.sig.State {
	case catalog.StateOK, catalog.StateOpaqueRV:
		return true
	case catalog.StateAheadOfHead:
		return v.lostHistory || v.listedInLoss || c.h.unsettled(v.r)
	case catalog.StateNoBookmarks:
		return !v.allBookmarks || firstBookmark
	case catalog.StateHeadUnknown:
		return c.h.Setup.NoStart || v.lostHistory
	}
	return false
}

// still reports whether nothing is ever written in the history: no
// background, no load, no canary. The head probe's check reads tell
// another etcd from a watch cache frozen in a history etcd lost only by
// one of them moving (Space.contradict: frozen caches move neither), so in
// a still world a resource of another etcd stays in its configured space,
// ahead of its head or below it. No cluster with a control plane is still
// (leader-election leases renew every few seconds); the model draws it.
func (h History) still() bool {
	return h.Background == 0 && len(h.Loads) == 0 && len(h.Setup.canaries()) == 0
}

// mixedSpace reports whether r's configured RV space holds resources of
// more than one etcd.
func (h History) mixedSpace(r Watched) bool {
	for _, o := range h.Setup.Resources {
		if o.Space == r.Space && o.EtcdName() != r.EtcdName() {
			return true
		}
	}
	return false
}

// unsettled reports whether r's configured RV space mixes etcds where
// nothing tells which etcd each resource reads: the monitor never starts
// (no head probe's check reads) or nothing is ever written (still). Such a
// resource may stay ahead_of_head, a state whose runbook names a resource
// on another etcd as its cause.
func (h History) unsettled(r Watched) bool {
	return (h.Setup.NoStart || h.still()) && h.mixedSpace(r)
}
