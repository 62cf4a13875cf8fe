package sim

import (
	"slices"
	"time"
)

// Waivers that several invariants share: the cases no client can know,
// each stated in the table of docs/simulation.md (or the
// failure-mode row named). A waiver used by one invariant lives in its
// file.

// blind reports whether a restore at restored is still unknowable at
// now: no write has landed in the restored history and been answered. With
// a canary that is at most a canary interval, a write's round trip (four,
// on a slow connection: the one in flight, then a patch of an object the
// restore removed, its create, and the write after) and a probe, after
// the API server is back if it was down (every one, after a restore with
// Reset), or the release if the canary's
// connection was on an API server cut off etcd (its writes hang there; see
// docs/failure-modes.md: etcd restored); without one, nothing tells until the API servers restart and
// the informers relist.
//
// A restore is unknowable for good when no canary write can land below what
// was read: the canary's resource is not served then, or the cluster writes
// past the lost revisions before the canary's first write after the
// restore can land (a restore of a few seconds of a busy cluster's
// history, or one the canary could not write through: its API server down
// or cut off etcd until etcd's new history had passed the lost one; seed
// 4072629). docs/simulation.md: cache staleness, restoreUnseen's
// parenthesis.
func (c *Checker) blind(now, restored time.Time, etcd string) bool {
	canaries := c.h.Setup.canariesOn(etcd)
	if len(canaries) == 0 {
		return true // no canary writes to the restored etcd
	}
	window := c.h.Setup.CanaryInterval + 2*c.h.Setup.ProbeInterval + 5*time.Second
	var slow time.Duration
	from := restored
	// the faults that keep the canary from writing chain: each one that
	// begins before the canary could write moves that on to its end (a
	// cut-off server released into a deleted canary resource)
	for moved := true; moved; {
		moved = false
		a := from.Sub(c.start)
		for _, f := range c.h.Faults {
			switch {
			case (f.Kind == Restart || f.Kind == Restore && f.Reset) && f.Start <= a+window && a < f.End(),
				// an API server down (a restore with Reset stops them
				// all until its end): the canary writes, and the probe
				// reads, once it is back
				f.Kind == Cutoff && f.Start <= a+window && a < f.End() && c.cutOff(HostCanary, c.start.Add(f.End()), f.Dur):
				// the canary's connection on an API server cut off etcd:
				// its writes hang there until the release, and reads
				// through it answer from the cache of the lost history
				moved = true
				from = c.start.Add(f.End())
			case f.Kind == Slow && f.Host == HostCanary && f.Start <= a+window && a < f.End():
				// the write in flight at the restore, then the next one,
				// which may find the canary object gone with the restore
				// (a 404, then a create): each answers a latency late (the
				// canary writes one at a time)
				slow = max(slow, f.Latency)
			case f.Kind == DeleteCRD && slices.Equal(canaries, []string{f.Resource}) && f.Start <= a+c.h.Setup.CanaryInterval && a < f.End()+c.h.Setup.CanaryInterval:
				// the canary's resource gone before its next write could land
				return true
			case (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostCanary && f.Start <= a+c.h.Setup.CanaryInterval && a < f.End():
				return true // the canary cannot write while the restore is to be seen
			}
		}
	}
	if c.overwritten(restored, from.Sub(restored)+c.h.Setup.CanaryInterval+5*time.Second) {
		return true // the cluster overwrites the lost revisions before a canary write lands
	}
	return now.Sub(from) <= window+4*slow
}

// overwritten reports whether the restore at restored is one whose lost
// revisions the cluster's writes pass within d: a write landing later
// lands above everything the lost history held.
func (c *Checker) overwritten(restored time.Time, d time.Duration) bool {
	at := restored.Sub(c.start)
	rate := c.h.Background
	for _, l := range c.h.Loads {
		rate += l.Rate
	}
	for _, f := range c.h.Faults {
		if f.Kind == Restore && (f.Start == at.Round(time.Second) || f.Start <= at && at < f.Start+time.Second) &&
			rate > 0 && time.Duration(float64(f.Back)/rate*float64(time.Second)) < d {
			return true
		}
	}
	return false
}

// restoreBlind reports whether the latest restore of v's etcd is still
// unknowable (blind).
func (c *Checker) restoreBlind(v *resourceAt) bool {
	return v.restored >= 0 && c.blind(v.s.At, c.start.Add(v.restored), v.etcd)
}

// unseenLoss reports whether what v's store misses may be hidden by a restore
// the monitor cannot see yet: no RV tells a reverted or swallowed write from a
// present one. Any of restoreUnseen, mixedHistories (v.mixed) and
// listedFromTainted. docs/simulation.md: cache staleness and RV lag, "waived
// while a restore cannot be seen yet".
func (c *Checker) unseenLoss(v *resourceAt) bool {
	return c.restoreUnseen(v) || v.mixed || c.listedFromTainted(v)
}

// restoreUnseen reports whether a restore the monitor cannot see yet (no
// canary write landed below what it read: blind) hides what v's store misses:
// the change it lacks is the restore's revert, or it has not listed since the
// restore (or listed from a watch cache of the lost history), so it may hold
// the writes a watch cache ahead of etcd swallowed. docs/simulation.md: cache
// staleness, "waived while a restore cannot be seen yet".
func (c *Checker) restoreUnseen(v *resourceAt) bool {
	return v.reverted && c.blind(v.s.At, v.fresh, v.etcd) || v.restored >= 0 && (v.unlisted || v.listedInLoss) && c.restoreBlind(v)
}

// listedFromTainted reports whether v's store last listed while a watch cache
// held objects of a lost history (though it follows etcd again), and nothing
// could show it since: its list may hold them, and their RVs are etcd's, so
// only a canary write after the list, landing below its RV, tells (or the
// revert, or the restore, is still unseen). Where every such cache had
// followed etcd on past its frozen RV when the store listed
// (listedResumed), none can: etcd's revision is above the list's, and a
// list from a restarted API server looks the same (seed 3408720, shrunk).
// docs/simulation.md: cache staleness, "for a store listed while a watch
// cache held objects of a lost history, until a canary write after the
// list can show it"; README, Limits.
func (c *Checker) listedFromTainted(v *resourceAt) bool {
	return v.listedTainted && (v.reverted || v.listedResumed || c.restoreBlind(v) || c.canaryBlockedThrough(latestList(v.truth).Add(c.h.Setup.CanaryInterval), v.s.At, v.etcd))
}

// mixedHistories reports whether API servers behind the balancer serve
// different histories (etcd restored, some of them restarted since, some
// not): a relist may land on a watch cache of the lost history, and reads
// answered by different servers disagree until samples contradict it
// (docs/failure-modes.md: a restore under several API servers; cache
// staleness, "behind a balancer whose API servers serve different
// histories"). The monitor cannot tell the histories apart meanwhile. It
// notes, for res, the latest scrape at which a cache served the lost
// history: observe calls it once per scrape.
func (c *Checker) mixedHistories(res string, truth ResourceTruth, now time.Time) bool {
	if c.h.Setup.Servers <= 1 {
		return false
	}
	if truth.CachesLost {
		c.lostCaches[res] = now
		return true
	}
	// a store listed while caches of the lost history served may hold its
	// objects until it lists again
	for _, it := range truth.Informers {
		if it.ListedAt.Before(c.lostCaches[res]) {
			return true
		}
	}
	return false
}

// measuredInLoss reports whether v's RV lag may have been measured against a
// head of a lost history: any lag while a restore cannot be seen (without a
// canary the heads may be a lost history's until the API servers restart), or
// a delivery within 2 minutes after the restore, measured against a head read
// from a watch cache of the lost history, above it: it stands until the next
// one. docs/simulation.md: RV lag, "while the store's latest delivery came
// within 2 min after a restore".
func (c *Checker) measuredInLoss(v *resourceAt) bool {
	measured := c.restoreBlind(v)
	for _, it := range v.truth.Informers {
		at := c.start.Add(v.restored)
		measured = measured || v.restored >= 0 && !it.Last.Before(at) && it.Last.Sub(at) < 2*time.Minute
	}
	return measured
}

// unprovable reports whether nothing could prove r's quiet cache caught up
// lately, so a stall's lag (head - RV) stands until its next event: its
// bookmarks carry no news (freshness reads off, and its etcd sends no
// progress notifications or one every 10 minutes), or the freshness reads
// hung or were refused in the last 3 minutes (docs/how-it-measures.md:
// RV lag; the table's RV lag row, "while nothing can prove a quiet cache
// caught up" and "while the freshness reads hang or are refused").
func (c *Checker) unprovable(r Watched, now time.Time) bool {
	if c.readsFailed(now, 3*time.Minute) {
		return true
	}
	if !c.h.Setup.NoFreshnessReads {
		return false
	}
	etcd := r.EtcdName()
	for _, e := range c.h.Setup.Etcds {
		if e.Name == etcd {
			return e.ProgressNotify == 0 || e.ProgressNotify >= 10*time.Minute
		}
	}
	return false
}

// readsFailed reports whether the freshness reads, which ride the informers'
// connection, could fail (hang or be refused, or hang on an API server cut
// off etcd) at some point in the window before now: without them a stuck
// cache's bookmarks prove nothing wrong, and the lag is known only from the
// canary or a stall. docs/simulation.md: RV lag, "waived while the
// freshness reads hang or are refused".
func (c *Checker) readsFailed(now time.Time, window time.Duration) bool {
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Hang || f.Kind == Refuse) && f.Host == HostInformers && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return c.cutOff(HostInformers, now, window)
}

// sawtoothBounded reports whether a healthy quiet resource is proven fresh
// at least every healthyProof: the freshness reads are on and reach the
// API server of its watch (not HTTP/1.1 behind several API servers, where
// a read may take a connection the balancer placed on another), or etcd
// sends progress notifications at least once a bookmark period. When not,
// a healthy quiet cache is proven fresh only when etcd's progress
// notification (or a read that happens to reach its server) moves its
// watch cache (every 10 minutes by default), so its sawtooth has no bound
// the checker can hold it to. docs/simulation.md: cache staleness,
// healthy, "freshness reads off, or on HTTP/1.1 behind several API
// servers, and etcd's progress notifications rarer than a minute".
func (c *Checker) sawtoothBounded() bool {
	if !c.readsElsewhere() {
		return true
	}
	for _, e := range c.h.Setup.Etcds {
		if e.Name == "main" && (e.ProgressNotify == 0 || e.ProgressNotify > time.Minute) {
			return false
		}
	}
	return true
}

// canaryBlockedThrough reports whether one fault kept every canary of
// etcd from writing from before from until now: their connection frozen,
// hung or refused, or the resource of the only one deleted.
func (c *Checker) canaryBlockedThrough(from, now time.Time, etcd string) bool {
	canaries := c.h.Setup.canariesOn(etcd)
	if len(canaries) == 0 {
		return true
	}
	start, end := from.Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		blocks := (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostCanary || f.Kind == DeleteCRD && slices.Equal(canaries, []string{f.Resource})
		if blocks && f.Start <= start && f.End() >= end {
			return true
		}
	}
	return false
}

// afterLoss reports whether v's store may still hold objects of a history
// etcd lost, or be measured against one: a watch cache of it serves such
// a history (or did in the last 3 minutes: the monitor sees it once a
// write lands above the reads, a canary interval, and proves again at the
// next bookmark), its store has not listed since the restore, or it last
// listed while a watch cache served one. Its staleness over-estimates
// until it lists again (docs/how-it-measures.md: RV regressions, "A
// store that has not listed since the restore ... stays ahead_of_head
// until it lists again"; the table's "a store that may hold a lost
// history's objects until it lists"): not a lie, and no healthy bound
// holds.
func afterLoss(v *resourceAt) bool {
	return v.lostHistory || v.lostLately || v.listedInLoss
}

// readsElsewhere reports whether the exporter's freshness reads may not
// reach the API server of the watch they are for: they are off, or on
// HTTP/1.1 behind several API servers (each pooled connection may land on
// another).
func (c *Checker) readsElsewhere() bool {
	return c.h.Setup.NoFreshnessReads || c.h.Setup.HTTP1 && c.h.Setup.Servers > 1
}
