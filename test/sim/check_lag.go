package sim

import "time"

// lagInvariant implements the docs/simulation.md row "RV lag".
//
// Rule "lag 0 while missing": the lag is never 0 while the store misses
// writes older than the first bookmark's due time (firstBookmarkDue,
// longer on a slow connection: the freshness read answers after the
// bookmark it was meant for, and the next one judges it), where the
// exporter can know (lagProvable). Waivers: a watch reopened on a
// disrupted path within that time (its cadence starts anew when it opens,
// after the client's backoff: cadenceFrom), unseenLoss,
// a lost history while its restore is blind (restoreBlind), readsFailed.
//
// Rule "lag while nothing missing": never above the SLO's lagSLO once
// nothing was missing for 2 minutes and every watch was live for 2.
// Waivers: a watch cache serving a lost history (CachesLost),
// measuredInLoss, unprovable.
//
// Rule "lag while idle", its sharp form for a resource nobody writes: an
// idle resource whose store misses nothing and whose every watch is live is
// exactly 0 behind, whatever the cluster's write rate elsewhere: its lag is
// 0 or unknown. Idle is either of: pristine (nothing ever written to it,
// no fault begun: from its first list on, its lists and bookmarks are all
// it needs) or quiet (nothing written to it for idleFor, its store missing
// nothing and every watch of it live, following and undisrupted for as
// long, no fault active or ended within idleFor). Waivers: a fault within
// idleFor (a slow or frozen path makes lag rise by design, and a fault's
// effect outlives it by up to a proof period), a restore of its etcd so far
// (a head read from a watch cache of the lost history measures against
// another history), a watch cache serving a lost history (CachesLost).
type lagInvariant struct{}

// idleFor is how long a resource must have had no write, its store missing
// nothing, every watch of it live and undisrupted and no fault anywhere,
// before its RV lag must be exactly 0: longer than an event's lag may
// stand before a proof shows the store caught up (healthyProof), with room.
const idleFor = 3 * time.Minute

func (lagInvariant) row() string { return "RV lag" }

func (lagInvariant) check(c *Checker, v *resourceAt) {
	sig, now := v.sig, v.s.At
	deadline := firstBookmarkDue(sig)
	if l := c.latency(HostInformers, now, v.truthStale); l > 0 {
		deadline += time.Duration(max(60, sig.BookmarkPeriod)*float64(time.Second)) + 2*l
	}
	reopened := len(v.truth.Informers) > 0
	for _, it := range v.truth.Informers {
		reopened = reopened && it.Live && now.Sub(c.cadenceFrom(v.name, it)) < deadline
	}
	if sig.LagOK && sig.Lag == 0 && v.truthStale > deadline && !reopened && c.lagProvable(v.r, now, v.truthStale) && !c.unseenLoss(v) && !(v.lostHistory && c.restoreBlind(v)) && !c.readsFailed(now, v.truthStale) {
		c.fail(v, "lag 0 while missing", "RV lag 0, but the cache lacks %d changes, the oldest committed %.0fs ago", v.missing, v.truthStale.Seconds())
	}
	if sig.LagOK && sig.Lag > lagSLO && v.missing == 0 && v.liveFor > 2*time.Minute && now.Sub(c.missingAt[v.name]) > 2*time.Minute && !v.truth.CachesLost && !c.measuredInLoss(v) && !c.unprovable(v.r, now) {
		c.fail(v, "lag while nothing missing", "RV lag %.0f while every watch is live and nothing is missing", sig.Lag)
	}
	if !sig.LagOK || sig.Lag == 0 || v.missing > 0 || v.liveFor == 0 || !v.truth.Exists || v.truth.CachesLost || c.restores[v.etcd] > 0 {
		return
	}
	switch {
	case !c.faultsBefore(now) && !c.writtenWithin(v.name, now, now.Sub(c.start)+time.Second):
		c.fail(v, "lag while idle", "RV lag %.0f, but nothing was ever written to it, no fault began, its store misses nothing and every watch of it is live", sig.Lag)
	case v.liveFor >= idleFor && now.Sub(c.missingAt[v.name]) >= idleFor && c.quiet(now, idleFor) && !c.writtenWithin(v.name, now, idleFor):
		c.fail(v, "lag while idle", "RV lag %.0f, but nothing was written to it for %v, no fault since, its store misses nothing and every watch of it is live", sig.Lag, idleFor)
	}
}

// writtenWithin reports whether anything may have been written to resource
// name in the window before now: a load on it, the canary's writes, or a
// deletion or re-creation of its CRD.
func (c *Checker) writtenWithin(name string, now time.Time, window time.Duration) bool {
	if c.h.Setup.canaried(name) {
		return true
	}
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	for _, l := range c.h.Loads {
		if l.Resource == name && l.Rate > 0 && l.Start <= to && l.End >= from {
			return true
		}
	}
	for _, f := range c.h.Faults {
		if f.Kind == DeleteCRD && f.Resource == name && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return false
}

// lagProvable reports whether the monitor can tell, by now, that r's cache has
// missed writes for window while its watch delivers bookmarks: its exporter
// informers read consistently on their own connection before bookmarks
// (freshness reads on), or the canary writes it (and could, through that
// window: a canary write is overdue a minute after it). Otherwise a cache that
// stopped following etcd sends bookmarks at its old RV, and looks like a quiet
// resource to any client. docs/simulation.md: RV lag, "where the exporter can
// know".
func (c *Checker) lagProvable(r Watched, now time.Time, window time.Duration) bool {
	if c.h.Setup.canaried(r.Name()) && !c.canaryBlocked(now, window) {
		return true
	}
	if r.NoBookmarks {
		return false // a cache that stopped following etcd looks like a quiet resource
	}
	if c.h.Setup.NoFreshnessReads || c.h.Setup.HTTP1 {
		// (on HTTP/1.1 the exporter learns that a read may reach another
		// API server than its watch's, and judges no cache by it)
		return false
	}
	for _, in := range r.Informers {
		if in.Embedded {
			return false
		}
	}
	return true
}

// canaryBlocked reports whether the canary's connection was frozen, hung,
// refused or slowed at some point in the window before now, or placed on
// an API server cut off etcd (its writes hang there).
func (c *Checker) canaryBlocked(now time.Time, window time.Duration) bool {
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse || f.Kind == Slow) && f.Host == HostCanary && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return c.cutOff(HostCanary, now, window)
}

// cutOff reports whether a connection of host was placed on an API server
// cut off etcd at a scrape in the window before now (Checker.cutAt).
func (c *Checker) cutOff(host string, now time.Time, window time.Duration) bool {
	for _, at := range c.cutAt[host] {
		if !at.Before(now.Add(-window)) && !at.After(now) {
			return true
		}
	}
	return false
}

// latency returns the largest latency of the connection of host in the
// window before now (0: none was slowed).
func (c *Checker) latency(host string, now time.Time, window time.Duration) time.Duration {
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	var l time.Duration
	for _, f := range c.h.Faults {
		if f.Kind == Slow && f.Host == host && f.Start <= to && f.End() >= from {
			l = max(l, f.Latency)
		}
	}
	return l
}
