package sim

import (
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Signals are what the monitor exports for one resource at a scrape; a
// value it does not export is unknown (ok false).
type Signals struct {
	Staleness, ProofPeriod, Lag, Silence, BookmarkPeriod float64
	StalenessOK, ProofOK, LagOK, SilenceOK               bool
	InformerRV, QueueDepth                               float64
	InformerRVOK                                         bool
	State                                                string
	Regressions, Relists                                 float64
	Synced                                               bool
	Space                                                string
}

// SignalsOf reads the signals of resource res from a scrape.
func SignalsOf(mfs []*dto.MetricFamily, res string) Signals {
	var s Signals
	s.Staleness, s.StalenessOK = Value(mfs, catalog.CacheStaleness.Name, catalog.LabelResource, res)
	s.ProofPeriod, s.ProofOK = Value(mfs, catalog.FreshnessProofPeriod.Name, catalog.LabelResource, res)
	s.Lag, s.LagOK = Value(mfs, catalog.ResourceVersionLag.Name, catalog.LabelResource, res)
	s.Silence, s.SilenceOK = Value(mfs, catalog.WatchSilence.Name, catalog.LabelResource, res)
	s.BookmarkPeriod, _ = Value(mfs, catalog.WatchBookmarkPeriod.Name, catalog.LabelResource, res)
	s.InformerRV, s.InformerRVOK = Value(mfs, catalog.InformerResourceVersion.Name, catalog.LabelResource, res)
	s.QueueDepth, _ = Value(mfs, catalog.StoreQueueDepth.Name, catalog.LabelResource, res)
	for _, st := range catalog.States() {
		if v, _ := Value(mfs, catalog.ResourceState.Name, catalog.LabelResource, res, catalog.LabelState, st); v == 1 {
			s.State = st
		}
	}
	s.Regressions, _ = Value(mfs, catalog.ResourceVersionRegressions.Name, catalog.LabelResource, res)
	for _, reason := range []string{catalog.RelistExpired, catalog.RelistError} {
		v, _ := Value(mfs, catalog.Relists.Name, catalog.LabelResource, res, catalog.LabelReason, reason)
		s.Relists += v
	}
	v, _ := Value(mfs, catalog.InformerSynced.Name, catalog.LabelResource, res)
	s.Synced = v == 1
	for _, mf := range mfs {
		if mf.GetName() != catalog.ResourceInfo.Name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var isRes bool
			var space string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case catalog.LabelResource:
					isRes = lp.GetValue() == res
				case catalog.LabelSpace:
					space = lp.GetValue()
				}
			}
			if isRes {
				s.Space = space
			}
		}
	}
	return s
}

// Tolerances of the invariants, next to the signal definitions in the
// docs/simulation.md.
const (
	// healthyProof is how far above the truth a healthy resource's
	// staleness may saw: a bookmark period (1m), up to the cacher's 1s
	// dispatch tick late, a probe interval and its jitter (5.5s), and the
	// freshness read's lead (8s), rounded up.
	healthyProof = 80 * time.Second
	// stallAfter is the watch-stall condition of the shipped alert:
	// silence above max(3 bookmark periods, 180s).
	stallAfter = 180 * time.Second
	// lagSLO is the RV-lag SLO's threshold (revisions).
	lagSLO = 500
	// recoverWithin is how long after the last fault ends every signal is
	// back in its healthy range.
	recoverWithin = 5 * time.Minute
)

// Violation is an invariant that did not hold.
type Violation struct {
	At       time.Duration // since the history began
	Resource string
	Rule     string
	Detail   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s: %s: %s", goDuration(v.At.Round(time.Millisecond)), v.Resource, v.Rule, v.Detail)
}

// Checker checks every scrape of a history against the truth.
type Checker struct {
	h          *History
	start      time.Time
	liveSince  map[string]time.Time // by resource/host: since when its watch has been live at every scrape
	absent     map[string]time.Time // by resource: since when (at most) it has not been served at every scrape
	missingAt  map[string]time.Time // by resource: the latest scrape at which its cache missed a change
	waitingAt  map[string]time.Time // by resource: the latest scrape at which a watch of it waited for its cache to move (InformerTruth.Waiting)
	restores   map[string]int       // by etcd: restores started so far
	lostCaches map[string]time.Time // by resource: the latest scrape at which a watch cache of it served a lost history, behind a balancer
	// bookmarksAt, by resource: since when (at most) every watch of it has
	// been getting bookmarks
	bookmarksAt map[string]time.Time
	lists       map[string]listSeen  // by resource/host: its latest list, and whether a cache served a lost history then
	lastLost    map[string]time.Time // by resource: the latest scrape at which a watch cache of its etcd served a lost history
	Violations  []Violation
	// Excess is the largest staleness above the truth on a healthy
	// resource, for calibrating healthyProof.
	Excess time.Duration
}

// NewChecker returns a checker of h's scrapes; start is when h began.
func NewChecker(h *History, start time.Time) *Checker {
	hc := *h
	hc.Setup.defaults()
	h = &hc
	return &Checker{h: h, start: start, liveSince: map[string]time.Time{}, absent: map[string]time.Time{}, missingAt: map[string]time.Time{}, waitingAt: map[string]time.Time{}, restores: map[string]int{}, lostCaches: map[string]time.Time{}, bookmarksAt: map[string]time.Time{}, lists: map[string]listSeen{}, lastLost: map[string]time.Time{}}
}

func (c *Checker) fail(at time.Time, res, rule, format string, args ...any) {
	if len(c.Violations) < 20 {
		c.Violations = append(c.Violations, Violation{At: at.Sub(c.start), Resource: res, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
}

// quiet reports whether no fault is active at now and the last one ended
// at least d before.
func (c *Checker) quiet(now time.Time, d time.Duration) bool {
	since := now.Sub(c.start)
	for _, f := range c.h.Faults {
		if f.Start <= since && since < f.End()+d {
			return false
		}
	}
	return true
}

// Check checks one scrape.
func (c *Checker) Check(s Scrape) {
	since := s.At.Sub(c.start)
	for _, f := range c.h.Faults {
		if f.Kind == Restore && f.Start <= since {
			etcd := f.Etcd
			if etcd == "" {
				etcd = "main"
			}
			c.restores[etcd] = max(c.restores[etcd], c.countRestores(etcd, since))
		}
	}
	for _, r := range c.h.Setup.Resources {
		name := r.Name()
		sig := SignalsOf(s.Families, name)
		truth := s.Truth[name]
		fresh := s.At
		missing := 0
		reverted := false
		allLive, allBookmarks, lostHistory, unlisted, waiting := true, true, truth.CachesLost, false, false
		etcd := r.Etcd
		if etcd == "" {
			etcd = "main"
		}
		restored := c.lastRestore(etcd, since)
		liveFor := time.Duration(1 << 62)
		for _, it := range truth.Informers {
			if it.Fresh.Before(fresh) {
				fresh, reverted = it.Fresh, it.Reverted
			}
			missing += it.Missing
			key := name + "/" + it.Host
			if !it.Live || !it.Following {
				delete(c.liveSince, key)
				allLive = false
			} else if _, ok := c.liveSince[key]; !ok {
				c.liveSince[key] = s.At
			}
			liveFor = min(liveFor, s.At.Sub(c.liveSince[key]), s.At.Sub(it.Disrupted))
			allBookmarks = allBookmarks && it.Bookmarks
			waiting = waiting || it.Waiting
			lostHistory = lostHistory || it.LostHistory
			// a store that has not listed since a restore may hold objects
			// of the lost history: nothing proves it fresh until it lists
			unlisted = unlisted || (restored >= 0 && it.ListedAt.Before(c.start.Add(restored)))
		}
		lostHistory = lostHistory || unlisted
		if _, ok := c.bookmarksAt[name]; !allBookmarks {
			delete(c.bookmarksAt, name)
		} else if !ok {
			c.bookmarksAt[name] = s.At.Add(-c.h.Setup.Scrape)
		}
		mixed := c.mixedHistories(name, truth, s.At)
		c.noteLists(name, truth, s)
		listedInLoss, listedTainted := c.listedInLoss(name, truth)
		if !allLive {
			liveFor = 0
		}
		truthStale := s.At.Sub(fresh)
		if truth.Exists {
			delete(c.absent, name)
		} else if _, ok := c.absent[name]; !ok {
			// it was served at the scrape before: absent since then at most
			c.absent[name] = s.At.Add(-c.h.Setup.Scrape)
		}

		// the queue shows what waits to be applied (within the pairwise
		// merging's resolution), and the informer RV counts only what is applied
		for _, it := range truth.Informers {
			if it.Pending > 0 && sig.QueueDepth < float64(it.Pending-it.Pending/16-2) {
				c.fail(s.At, name, "queue depth below the truth", "queue depth %.0f, but %d events wait for the store", sig.QueueDepth, it.Pending)
			}
			if it.Pending > 0 && sig.InformerRVOK && uint64(sig.InformerRV) > it.AppliedRV && it.AppliedRV > 0 {
				c.fail(s.At, name, "informer RV ahead of the store", "informer RV %.0f, but the store applied up to %d (%d events wait)", sig.InformerRV, it.AppliedRV, it.Pending)
			}
		}
		slowStore := false
		for _, in := range r.Informers {
			slowStore = slowStore || (in.SlowStore > 0 && !in.Embedded)
		}
		// a restore the monitor cannot see yet (no canary write landed
		// below what it read) hides both its reverts and the writes a
		// watch cache ahead of etcd swallows, from staleness and lag alike
		// (a list from a watch cache holding a lost history is seen only
		// by a canary write after it landing below its RV)
		unseen := reverted && c.blind(s.At, fresh) || restored >= 0 && (unlisted || listedInLoss) && c.blind(s.At, c.start.Add(restored)) || mixed || listedTainted && (reverted || restored >= 0 && c.blind(s.At, c.start.Add(restored)) || c.canaryBlockedThrough(latestList(truth).Add(c.h.Setup.CanaryInterval), s.At))
		// no claimed freshness that the truth contradicts
		if sig.StalenessOK && !slowStore {
			claimed := s.At.Add(-time.Duration(sig.Staleness * float64(time.Second)))
			if claimed.After(fresh.Add(time.Millisecond)) && !unseen {
				c.fail(s.At, name, "staleness below the truth", "staleness %.3fs, but the cache lacks a change committed %.3fs ago (%d missing)", sig.Staleness, truthStale.Seconds(), missing)
			}
		}
		// a healthy resource's staleness saws at most healthyProof above the truth
		if truth.CachesLost {
			c.lastLost[name] = s.At
		}
		// once no cache serves a lost history, the monitor sees it when a
		// write lands above the reads (a canary interval) and proves again
		// at the next bookmark
		lostLately := !c.lastLost[name].IsZero() && s.At.Sub(c.lastLost[name]) < 3*time.Minute
		healthy := allLive && c.quiet(s.At, 2*time.Minute) && liveFor >= 2*time.Minute && allBookmarks && c.sawtoothBounded() && !lostHistory && !lostLately && !listedInLoss && !listedTainted
		if healthy && sig.StalenessOK {
			excess := time.Duration(sig.Staleness*float64(time.Second)) - truthStale
			c.Excess = max(c.Excess, excess)
			if excess > healthyProof {
				c.fail(s.At, name, "healthy staleness above the truth", "staleness %.1fs, truth %.1fs: %.1fs above (tolerance %s)", sig.Staleness, truthStale.Seconds(), excess.Seconds(), healthyProof)
			}
		}
		// no stall while the watch is live, unless its server sent it
		// nothing: kube-apiserver sends a watch no bookmark at or below the
		// revision it started from (cacheWatcher.process; seen on a real
		// server by test/sim/conformance), so a watch opened at a quiet
		// cache's revision hears nothing until a write or a progress
		// notification moves the cache (etcd's default interval is 10 min;
		// the freshness reads ask for one, unless they are off or refused),
		// then its next bookmark comes up to a bookmark period later; no
		// client can tell it from a stalled one. A stated limitation (seeds
		// 780 and 843 of the short run found it).
		if waiting {
			c.waitingAt[name] = s.At
		}
		waited := !c.waitingAt[name].IsZero() && s.At.Sub(c.waitingAt[name]) <= time.Duration(max(75, sig.BookmarkPeriod+15)*float64(time.Second))
		if sig.SilenceOK && liveFor > stallAfter && !waited {
			limit := max(3*sig.BookmarkPeriod, stallAfter.Seconds())
			if sig.Silence > limit {
				c.fail(s.At, name, "stall while live", "silence %.0fs > %.0fs while every watch of it was live for %s", sig.Silence, limit, liveFor.Round(time.Second))
			}
		}
		// no stall while there is nothing to watch
		disrupted := time.Time{}
		for _, it := range truth.Informers {
			disrupted = maxTime(disrupted, it.Disrupted)
		}
		if since, ok := c.absent[name]; ok && s.At.Sub(since) > stallAfter && sig.SilenceOK && disrupted.Before(since) && !c.pathBroken(s.At) {
			if limit := max(3*sig.BookmarkPeriod, stallAfter.Seconds()); sig.Silence > limit {
				c.fail(s.At, name, "stall while absent", "silence %.0fs > %.0fs while the resource has not been served for %s", sig.Silence, limit, s.At.Sub(since).Round(time.Second))
			}
		}
		// the freshness proof period is the healthy sawtooth's height, not an incident's
		if sig.ProofOK && c.sawtoothBounded() && c.quiet(s.At, 5*time.Minute) && !c.unseenRestoreLearned(s.At) && time.Duration(sig.ProofPeriod*float64(time.Second)) > healthyProof {
			c.fail(s.At, name, "proof period above the healthy sawtooth", "freshness proof period %.0fs > %s, the most a healthy resource's sawtooth reaches here", sig.ProofPeriod, healthyProof)
		}
		// RV lag never 0 while the store misses writes older than a
		// bookmark period, where the exporter can know: its informers read
		// consistently on their own connection before each bookmark, the
		// canary writes the resource, or the watch went silent
		// (a watch reopened on a disrupted path gets its cadence anew: its
		// first bookmark is not due before then)
		lagDeadline := time.Duration(max(75, sig.BookmarkPeriod+15) * float64(time.Second))
		if l := c.latency(HostInformers, s.At, truthStale); l > 0 {
			// a slow connection answers the freshness read after the
			// bookmark it was meant for: the next one judges it
			lagDeadline += time.Duration(max(60, sig.BookmarkPeriod)*float64(time.Second)) + 2*l
		}
		reopened := len(truth.Informers) > 0
		for _, it := range truth.Informers {
			reopened = reopened && it.Live && s.At.Sub(it.Disrupted) < lagDeadline
		}
		// (what a restore reverted or swallowed is missing unseen while
		// the restore is: no RV tells, as for staleness)
		if sig.LagOK && sig.Lag == 0 && truthStale > lagDeadline && !reopened && c.lagProvable(r, s.At, truthStale) && !unseen && !(lostHistory && restored >= 0 && c.blind(s.At, c.start.Add(restored))) && !c.readsFailed(s.At, truthStale) {
			c.fail(s.At, name, "lag 0 while missing", "RV lag 0, but the cache lacks %d changes, the oldest committed %.0fs ago", missing, truthStale.Seconds())
		}
		// no lag above the SLO while nothing has been missing for a while
		// and every watch is live
		if missing > 0 {
			c.missingAt[name] = s.At
		}
		// (a delivery soon after a restore the monitor did not see may have
		// been measured against a head read from a cache of the lost
		// history, above it: it stands until the next one)
		// (or any lag, while a restore cannot be seen: without a canary
		// the heads may be a lost history's until the API servers restart)
		measuredInLoss := restored >= 0 && c.blind(s.At, c.start.Add(restored))
		for _, it := range truth.Informers {
			at := c.start.Add(restored)
			measuredInLoss = measuredInLoss || restored >= 0 && !it.Last.Before(at) && it.Last.Sub(at) < 2*time.Minute
		}
		if sig.LagOK && sig.Lag > lagSLO && missing == 0 && liveFor > 2*time.Minute && s.At.Sub(c.missingAt[name]) > 2*time.Minute && !truth.CachesLost && !measuredInLoss && !c.unprovable(r, s.At) {
			c.fail(s.At, name, "lag while nothing missing", "RV lag %.0f while every watch is live and nothing is missing", sig.Lag)
		}
		// a regression counted only when history was lost
		if int(sig.Regressions) > c.restores[etcd] {
			c.fail(s.At, name, "regression without restore", "%.0f regressions counted, %d restores of etcd %q", sig.Regressions, c.restores[etcd], etcd)
		}
		// back in the healthy range after the faults
		if c.quiet(s.At, recoverWithin) && c.faultsBefore(s.At) && allLive && missing == 0 && truth.Exists {
			var bad []string
			// (a watch whose cache began to move past its start gets its
			// first bookmark within a bookmark period; a store listed from
			// a watch cache of a lost history stays ahead of the head, its
			// staleness growing, until it lists again: what it holds may be
			// of that history, and a watch resuming above etcd's revision
			// gets only the writes above it)
			firstBookmark := s.At.Sub(c.bookmarksAt[name]) <= time.Minute+15*time.Second
			if sig.State != catalog.StateOK && sig.State != catalog.StateOpaqueRV && !(sig.State == catalog.StateAheadOfHead && (lostHistory || listedInLoss)) && !(sig.State == catalog.StateNoBookmarks && (!allBookmarks || firstBookmark)) {
				bad = append(bad, "state "+sig.State)
			}
			if sig.StalenessOK && allBookmarks && c.sawtoothBounded() && !lostHistory && !lostLately && !listedInLoss && time.Duration(sig.Staleness*float64(time.Second))-truthStale > healthyProof {
				bad = append(bad, fmt.Sprintf("staleness %.0fs (truth %.0fs)", sig.Staleness, truthStale.Seconds()))
			}
			if sig.LagOK && sig.Lag > lagSLO && !truth.CachesLost && !measuredInLoss && !c.unprovable(r, s.At) {
				bad = append(bad, fmt.Sprintf("RV lag %.0f", sig.Lag))
			}
			if len(bad) > 0 {
				c.fail(s.At, name, "not recovered", "%s, %s after the last fault ended", strings.Join(bad, ", "), recoverWithin)
			}
		}
	}
}

// noteLists records, for each informer of res that listed since the last
// scrape, what the watch caches were when it did (as of this scrape: the
// list came after the previous one): serving a history etcd lost, or
// holding objects of one.
func (c *Checker) noteLists(res string, truth ResourceTruth, s Scrape) {
	lost, tainted := false, false
	for _, rt := range s.Truth {
		lost = lost || rt.CachesLost
		tainted = tainted || rt.CachesTainted
	}
	for _, it := range truth.Informers {
		key := res + "/" + it.Host
		if last, ok := c.lists[key]; !ok || !it.ListedAt.Equal(last.at) {
			c.lists[key] = listSeen{at: it.ListedAt, inLoss: lost, tainted: tainted}
		}
	}
}

// listedInLoss reports whether an informer of res last listed while some
// watch cache served a history etcd lost: its list may have come from one
// (the monitor counts no list while writes land below the reads), so its
// staleness may stay high until it lists again; an over-estimate, not a
// lie. tainted: while some watch cache held objects of a lost history,
// though it followed etcd again; a list from one holds them, and nothing
// tells the monitor (its RVs are etcd's) until it lists from another.
func (c *Checker) listedInLoss(res string, truth ResourceTruth) (inLoss, tainted bool) {
	for _, it := range truth.Informers {
		l := c.lists[res+"/"+it.Host]
		inLoss, tainted = inLoss || l.inLoss, tainted || l.tainted
	}
	return inLoss, tainted
}

type listSeen struct {
	at              time.Time
	inLoss, tainted bool
}

// unprovable reports whether nothing could prove r's quiet cache caught up
// lately, so a stall's lag (head - RV) stands until its next event: its
// bookmarks carry no news (freshness reads off, and its etcd sends no
// progress notifications or one every 10 minutes), or the freshness reads
// hung or were refused in the last 3 minutes (docs/how-it-measures.md:
// RV lag).
func (c *Checker) unprovable(r Watched, now time.Time) bool {
	if c.readsFailed(now, 3*time.Minute) {
		return true
	}
	if !c.h.Setup.NoFreshnessReads {
		return false
	}
	etcd := r.Etcd
	if etcd == "" {
		etcd = "main"
	}
	for _, e := range c.h.Setup.Etcds {
		if e.Name == etcd {
			return e.ProgressNotify == 0 || e.ProgressNotify >= 10*time.Minute
		}
	}
	return false
}

// readsFailed reports whether the freshness reads, which ride the
// informers' connection, could fail (hang or be refused) at some point in
// the window before now: without them a stuck cache's bookmarks prove
// nothing wrong, and the lag is known only from the canary or a stall.
func (c *Checker) readsFailed(now time.Time, window time.Duration) bool {
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Hang || f.Kind == Refuse) && f.Host == HostInformers && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return false
}

// mixedHistories reports whether API servers behind the balancer serve
// different histories (etcd restored, some of them restarted since, some
// not): a relist may land on a watch cache of the lost history, and reads
// answered by different servers disagree until samples contradict it
// (docs/failure-modes.md: a restore under several API servers). The
// monitor cannot tell the histories apart meanwhile.
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

// blind reports whether a restore at restored is still unknowable at
// now: no write has landed in the restored history and been answered. With
// a canary that is at most a canary interval, a write's round trip (four,
// on a slow connection: the one in flight, then a patch of an object the
// restore removed, its create, and the write after) and a probe, after
// the API server is back if it was down (see docs/failure-modes.md: etcd
// restored); without one, nothing
// tells until the API servers restart and the informers relist.
//
// A restore is unknowable for good when no canary write can land below
// what was read: the canary's resource is not served then, or the cluster
// writes past the lost revisions faster than the canary writes (a restore
// of a few seconds of a busy cluster's history).
func (c *Checker) blind(now, restored time.Time) bool {
	if c.h.Setup.Canary == "" {
		return true
	}
	at := restored.Sub(c.start)
	window := c.h.Setup.CanaryInterval + 2*c.h.Setup.ProbeInterval + 5*time.Second
	var slow time.Duration
	from := restored
	for _, f := range c.h.Faults {
		switch {
		case f.Kind == Restart && f.Start <= at+window && at < f.End():
			// an API server down: the canary writes, and the probe reads,
			// once it is back
			from = maxTime(from, c.start.Add(f.End()))
		case f.Kind == Slow && f.Host == HostCanary && f.Start <= at+window && at < f.End():
			// the write in flight at the restore, then the next one, which
			// may find the canary object gone with the restore (a 404,
			// then a create): each answers a latency late (the canary
			// writes one at a time)
			slow = max(slow, f.Latency)
		case f.Kind == DeleteCRD && f.Resource == c.h.Setup.Canary && f.Start <= at+c.h.Setup.CanaryInterval && at < f.End()+c.h.Setup.CanaryInterval:
			// the canary's resource gone before its next write could land
			return true
		case (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostCanary && f.Start <= at+c.h.Setup.CanaryInterval && at < f.End():
			return true // the canary cannot write while the restore is to be seen
		case f.Kind == Restore && f.Start == at.Round(time.Second) || f.Kind == Restore && f.Start <= at && at < f.Start+time.Second:
			rate := c.h.Background
			for _, l := range c.h.Loads {
				rate += l.Rate
			}
			if rate > 0 && time.Duration(float64(f.Back)/rate*float64(time.Second)) < c.h.Setup.CanaryInterval+5*time.Second {
				return true
			}
		}
	}
	return now.Sub(from) <= window+4*slow
}

// lagProvable reports whether the monitor can tell, by now, that r's
// cache has missed writes for window while its watch delivers bookmarks:
// its exporter informers read consistently on their own connection before
// bookmarks (freshness reads on), or the canary writes it (and could,
// through that window: a canary write is overdue a minute after it).
func (c *Checker) lagProvable(r Watched, now time.Time, window time.Duration) bool {
	if c.h.Setup.Canary == r.Name() && !c.canaryBlocked(now, window) {
		return true
	}
	if r.NoBookmarks {
		return false // a cache that stopped following etcd looks like a quiet resource
	}
	if c.h.Setup.NoFreshnessReads {
		return false
	}
	for _, in := range r.Informers {
		if in.Embedded {
			return false
		}
	}
	return true
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

// pathBroken reports whether the informers' connection is frozen, hung or
// refused at now: whatever happened to a resource meanwhile, its watch is
// stalled (the monitor cannot learn that it was deleted).
func (c *Checker) pathBroken(now time.Time) bool {
	at := now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostInformers && f.Start <= at && at < f.End() {
			return true
		}
	}
	return false
}

// canaryBlocked reports whether the canary's connection was frozen, hung,
// refused or slowed at some point in the window before now.
func (c *Checker) canaryBlocked(now time.Time, window time.Duration) bool {
	from, to := now.Add(-window).Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		if (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse || f.Kind == Slow) && f.Host == HostCanary && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return false
}

// canaryBlockedThrough reports whether one fault kept the canary from
// writing from before from until now: its connection frozen, hung or
// refused, or its resource deleted.
func (c *Checker) canaryBlockedThrough(from, now time.Time) bool {
	if c.h.Setup.Canary == "" {
		return true
	}
	start, end := from.Sub(c.start), now.Sub(c.start)
	for _, f := range c.h.Faults {
		blocks := (f.Kind == Freeze || f.Kind == Hang || f.Kind == Refuse) && f.Host == HostCanary || f.Kind == DeleteCRD && f.Resource == c.h.Setup.Canary
		if blocks && f.Start <= start && f.End() >= end {
			return true
		}
	}
	return false
}

// latestList returns when the latest of the informers of a resource
// listed.
func latestList(truth ResourceTruth) time.Time {
	var at time.Time
	for _, it := range truth.Informers {
		at = maxTime(at, it.ListedAt)
	}
	return at
}

// sawtoothBounded reports whether a healthy quiet resource is proven fresh
// at least every healthyProof: the freshness reads are on, or etcd sends
// progress notifications at least once a bookmark period.
func (c *Checker) sawtoothBounded() bool {
	if !c.h.Setup.NoFreshnessReads {
		return true
	}
	for _, e := range c.h.Setup.Etcds {
		if e.Name == "main" && (e.ProgressNotify == 0 || e.ProgressNotify > time.Minute) {
			return false
		}
	}
	return true
}

// unseenRestoreLearned reports whether the proof period may hold a
// restore's sawtooth: with the freshness reads off it is learned from the
// sawtooth of the last 30 minutes, and a restore the monitor could not see
// (a watch cache of the lost history frozen above the head, its bookmarks
// arriving on time) looks like a healthy one to it.
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

// faultsBefore reports whether a fault began before now.
func (c *Checker) faultsBefore(now time.Time) bool {
	for _, f := range c.h.Faults {
		if f.Start < now.Sub(c.start) {
			return true
		}
	}
	return false
}

// lastRestore returns when the latest restore of etcd before since began
// (since the history's start), or -1.
func (c *Checker) lastRestore(etcd string, since time.Duration) time.Duration {
	last := time.Duration(-1)
	for _, f := range c.h.Faults {
		e := f.Etcd
		if e == "" {
			e = "main"
		}
		if f.Kind == Restore && e == etcd && f.Start <= since {
			last = max(last, f.Start)
		}
	}
	return last
}

func (c *Checker) countRestores(etcd string, since time.Duration) int {
	n := 0
	for _, f := range c.h.Faults {
		e := f.Etcd
		if e == "" {
			e = "main"
		}
		if f.Kind == Restore && e == etcd && f.Start <= since {
			n++
		}
	}
	return n
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
