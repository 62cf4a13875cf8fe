package sim

import "time"

// silenceInvariant implements the docs/simulation.md row "watch silence": no
// stall (silence above max(3 bookmark periods, stallAfter)) while every watch
// of a resource has been live for longer than stallAfter, nor while the
// resource has not been served for that long (nothing is watched then: silence
// is absent).
//
// Rules: "stall while live" (waiver: waitedLately) and "stall while
// absent" (waiver: pathBroken; only when no watch of it was disrupted
// since it went away).
type silenceInvariant struct{}

func (silenceInvariant) row() string { return "watch silence" }

func (silenceInvariant) check(c *Checker, v *resourceAt) {
	sig := v.sig
	limit := max(3*sig.BookmarkPeriod, stallAfter.Seconds())
	if sig.SilenceOK && v.liveFor > stallAfter && !c.waitedLately(v) && sig.Silence > limit {
		c.fail(v, "stall while live", "silence %.0fs > %.0fs while every watch of it was live for %s", sig.Silence, limit, v.liveFor.Round(time.Second))
	}
	disrupted := time.Time{}
	for _, it := range v.truth.Informers {
		disrupted = maxTime(disrupted, it.Disrupted)
	}
	if since, ok := c.absent[v.name]; ok && v.s.At.Sub(since) > stallAfter && sig.SilenceOK && disrupted.Before(since) && !c.pathBroken(v.s.At) && sig.Silence > limit {
		c.fail(v, "stall while absent", "silence %.0fs > %.0fs while the resource has not been served for %s", sig.Silence, limit, v.s.At.Sub(since).Round(time.Second))
	}
}

// waitedLately reports whether a watch of v waited for its cache to move
// (InformerTruth.Waiting) within the first bookmark's due time before now:
// kube-apiserver sends a watch no bookmark at or below the revision it started
// from (cacheWatcher.process; seen on a real server by test/sim/conformance),
// so a watch opened at a quiet cache's revision hears nothing until a write or
// a progress notification moves the cache (etcd's default interval is 10 min;
// the freshness reads ask for one, unless they are off or refused), then its
// next bookmark comes up to a bookmark period later; no client can tell it
// from a stalled one (seeds 780 and 843 of the short run found it).
// docs/simulation.md: watch silence, "waived while a watch's server sends it
// nothing because its watch cache has not moved past the revision the watch
// started from, and a bookmark period after".
func (c *Checker) waitedLately(v *resourceAt) bool {
	at := c.waitingAt[v.name]
	return !at.IsZero() && v.s.At.Sub(at) <= firstBookmarkDue(v.sig)
}

// pathBroken reports whether the informers' connection is frozen, hung or
// refused at now: whatever happened to a resource meanwhile, its watch is
// stalled (the monitor cannot learn that it was deleted). docs/simulation.md:
// watch silence, "for a resource not served, while the informers' connection
// is frozen, hung or refused".
func (c *Checker) pathBroken(now time.Time) bool {
	at := now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostInformers && f.Start <= at && at < f.End() {
			return true
		}
	}
	return false
}
