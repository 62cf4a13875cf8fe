package sim

import (
	"fmt"
	"slices"
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

// firstBookmarkDue is how long after a watch starts hearing from its
// cache (it opened, or its cache began to move past the revision it
// started from) its first bookmark may come: a bookmark period, up to 15 s
// late, and at least 75 s.
func firstBookmarkDue(sig Signals) time.Duration {
	return time.Duration(max(75, sig.BookmarkPeriod+15) * float64(time.Second))
}

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
	// reopened, by resource/host: when the first watch seen live since
	// its path's latest disruption opened (the client's backoff may
	// reopen it well after the path came back)
	reopened map[string]time.Time
	// cutAt, by host: the scrapes at which a connection of it was placed
	// on an API server cut off etcd (Cutoff): what it sent through that
	// server hung
	cutAt      map[string][]time.Time
	Violations []Violation
	// Excess is the largest staleness above the truth on a healthy
	// resource, for calibrating healthyProof.
	Excess time.Duration
}

// NewChecker returns a checker of h's scrapes; start is when h began.
func NewChecker(h *History, start time.Time) *Checker {
	hc := *h
	hc.Setup.defaults()
	h = &hc
	return &Checker{h: h, start: start, liveSince: map[string]time.Time{}, absent: map[string]time.Time{}, missingAt: map[string]time.Time{}, waitingAt: map[string]time.Time{}, restores: map[string]int{}, lostCaches: map[string]time.Time{}, bookmarksAt: map[string]time.Time{}, lists: map[string]listSeen{}, lastLost: map[string]time.Time{}, reopened: map[string]time.Time{}, cutAt: map[string][]time.Time{}}
}

func (c *Checker) fail(v *resourceAt, rule, format string, args ...any) {
	if len(c.Violations) < 20 {
		c.Violations = append(c.Violations, Violation{At: v.s.At.Sub(c.start), Resource: v.name, Rule: rule, Detail: fmt.Sprintf(format, args...)})
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

// An invariant is one row of the table of docs/simulation.md: it checks one
// resource at one scrape and reports, with c.fail, what does not hold. Each
// lives in its own file (check_*.go), whose doc names its row and the waivers
// it applies; the waivers are named functions, each saying what makes its case
// unknowable to any client and where docs/simulation.md states it.
type invariant interface {
	// row is the docs/simulation.md row it implements (the table's first
	// column).
	row() string
	check(c *Checker, v *resourceAt)
}

// invariants are checked in this order at every scrape, resource by
// resource: the order of the violations of one scrape (the first is what
// -sim.shrink keeps).
var invariants = []invariant{
	queueInvariant{},
	stalenessInvariant{},
	healthyStalenessInvariant{},
	silenceInvariant{},
	proofPeriodInvariant{},
	lagInvariant{},
	regressionsInvariant{},
	recoveryInvariant{},
}

// Check checks one scrape.
func (c *Checker) Check(s Scrape) {
	since := s.At.Sub(c.start)
	for _, f := range c.h.Faults {
		if f.Kind == Cutoff && f.Start <= since && since < f.End() {
			for host, servers := range s.Routes {
				if slices.Contains(servers, f.Server) {
					c.cutAt[host] = append(c.cutAt[host], s.At)
				}
			}
		}
	}
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
		v := c.observe(s, r)
		for _, inv := range invariants {
			inv.check(c, v)
		}
	}
}

// resourceAt is one resource at one scrape: what the monitor exports of
// it, the truth folded over its informers, and what the checker's
// bookkeeping knows of its past. The invariants read it, never change it.
type resourceAt struct {
	s     Scrape
	r     Watched
	name  string
	sig   Signals
	truth ResourceTruth
	etcd  string // the etcd holding it ("main" by default)

	// fresh is the oldest Fresh of its informers (s.At without one), and
	// reverted whether that informer's oldest missing change is a
	// restore's; truthStale is s.At - fresh; missing sums what they lack.
	fresh      time.Time
	reverted   bool
	truthStale time.Duration
	missing    int
	// allLive: every watch of it live and following; liveFor: for how
	// long (0 unless allLive); allBookmarks: every watch of it gets
	// bookmarks; waiting: some watch of it waits for its cache to move.
	allLive, allBookmarks, waiting bool
	liveFor                        time.Duration
	// restored is when the latest restore of its etcd began (since the
	// history began), or -1; unlisted: some store of it has not listed
	// since; lostHistory: a watch cache of its etcd serves a lost history
	// (CachesLost, LostHistory), or unlisted.
	restored              time.Duration
	unlisted, lostHistory bool
	// mixed: mixedHistories; listedInLoss, listedTainted, listedResumed:
	// listedInLoss; lostLately: a watch cache of it served a lost history
	// in the last 3 minutes.
	mixed, listedInLoss, listedTainted, listedResumed, lostLately bool
}

// observe folds r's truth at s over its informers and brings the
// checker's bookkeeping of r up to s, before any invariant reads it.
func (c *Checker) observe(s Scrape, r Watched) *resourceAt {
	since := s.At.Sub(c.start)
	name := r.Name()
	v := &resourceAt{s: s, r: r, name: name, sig: SignalsOf(s.Families, name), truth: s.Truth[name], etcd: r.EtcdName()}
	truth := v.truth
	v.fresh = s.At
	v.allLive, v.allBookmarks, v.lostHistory = true, true, truth.CachesLost
	v.restored = c.lastRestore(v.etcd, since)
	v.liveFor = time.Duration(1 << 62)
	// an informer that left the truth (stopped) is live anew from when a
	// successor of its host lists (simulation seed 1002605: an operator's
	// informer built again read as live since its predecessor's start,
	// and the lag of the backlog its list left counted as a lie)
	for key := range c.liveSince {
		if host, ok := strings.CutPrefix(key, name+"/"); ok && !slices.ContainsFunc(truth.Informers, func(it InformerTruth) bool { return it.Host == host }) {
			delete(c.liveSince, key)
		}
	}
	for _, it := range truth.Informers {
		if it.Fresh.Before(v.fresh) {
			v.fresh, v.reverted = it.Fresh, it.Reverted
		}
		v.missing += it.Missing
		key := name + "/" + it.Host
		if !it.Live || !it.Following {
			delete(c.liveSince, key)
			v.allLive = false
		} else if _, ok := c.liveSince[key]; !ok {
			c.liveSince[key] = s.At
		}
		v.liveFor = min(v.liveFor, s.At.Sub(c.liveSince[key]), s.At.Sub(it.Disrupted))
		if at := c.reopened[key]; at.Before(it.Disrupted) && !it.WatchOpened.Before(it.Disrupted) && !it.WatchOpened.IsZero() {
			c.reopened[key] = it.WatchOpened
		}
		v.allBookmarks = v.allBookmarks && it.Bookmarks
		v.waiting = v.waiting || it.Waiting
		v.lostHistory = v.lostHistory || it.LostHistory
		// a store that has not listed since a restore may hold objects
		// of the lost history: nothing proves it fresh until it lists. A
		// list whose snapshot was taken before the restore is of the old
		// history, however late it completed: no client can tell whether
		// its RV is below the revision etcd went back to (seed 4077866: a
		// list begun 8 s before the restore, completed 0.4 s after it)
		v.unlisted = v.unlisted || (v.restored >= 0 && it.ListTaken.Before(c.start.Add(v.restored)))
	}
	v.lostHistory = v.lostHistory || v.unlisted
	if _, ok := c.bookmarksAt[name]; !v.allBookmarks {
		delete(c.bookmarksAt, name)
	} else if !ok {
		c.bookmarksAt[name] = s.At.Add(-c.h.Setup.Scrape)
	}
	v.mixed = c.mixedHistories(name, truth, s.At)
	c.noteLists(name, truth, s)
	v.listedInLoss, v.listedTainted, v.listedResumed = c.listedInLoss(name, truth)
	if !v.allLive {
		v.liveFor = 0
	}
	v.truthStale = s.At.Sub(v.fresh)
	if truth.Exists {
		delete(c.absent, name)
	} else if _, ok := c.absent[name]; !ok {
		// it was served at the scrape before: absent since then at most
		c.absent[name] = s.At.Add(-c.h.Setup.Scrape)
	}
	if truth.CachesLost {
		c.lastLost[name] = s.At
	}
	// once no cache serves a lost history, the monitor sees it when a
	// write lands above the reads (a canary interval) and proves again
	// at the next bookmark
	v.lostLately = !c.lastLost[name].IsZero() && s.At.Sub(c.lastLost[name]) < 3*time.Minute
	if v.waiting {
		c.waitingAt[name] = s.At
	}
	if v.missing > 0 {
		c.missingAt[name] = s.At
	}
	return v
}

// noteLists records, for each informer of res that listed since the last
// scrape, what the watch caches were when it did: serving a history etcd
// lost, or holding objects of one, when the list completed (its etcd's)
// or as of this scrape (any etcd's; the list came after the previous
// one). On a busy cluster etcd's new history passes the lost caches within
// seconds, so a list from one looks clean at the next scrape (seed
// 4077866: 1,000 writes a second, a list 0.4 s after a restore, from a
// cache ahead of etcd then, behind it 5 s later).
func (c *Checker) noteLists(res string, truth ResourceTruth, s Scrape) {
	lost, tainted := false, false
	for _, rt := range s.Truth {
		lost = lost || rt.CachesLost
		tainted = tainted || rt.CachesTainted
	}
	for _, it := range truth.Informers {
		key := res + "/" + it.Host
		if last, ok := c.lists[key]; !ok || !it.ListedAt.Equal(last.at) {
			c.lists[key] = listSeen{at: it.ListedAt, inLoss: lost || it.ListInLoss, tainted: tainted || it.ListTainted}
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
// resumed: one listed while watch caches held objects of a lost history
// and none served it any more: every cache had followed etcd on past its
// frozen RV, so no write after the list can land below the list's RV.
func (c *Checker) listedInLoss(res string, truth ResourceTruth) (inLoss, tainted, resumed bool) {
	for _, it := range truth.Informers {
		l := c.lists[res+"/"+it.Host]
		inLoss, tainted = inLoss || l.inLoss, tainted || l.tainted
		resumed = resumed || l.tainted && !l.inLoss
	}
	return inLoss, tainted, resumed
}

type listSeen struct {
	at              time.Time
	inLoss, tainted bool
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

// cadenceFrom is since when the watch of resource name on it.Host has
// had its cadence anew: its path's latest disruption, or the first watch
// opened after it (a watch's first bookmark is due a period after it
// opened, and a client backs off before it reopens one).
func (c *Checker) cadenceFrom(name string, it InformerTruth) time.Time {
	if at := c.reopened[name+"/"+it.Host]; !at.Before(it.Disrupted) {
		return at
	}
	return it.Disrupted
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
