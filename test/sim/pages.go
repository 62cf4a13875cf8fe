package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// The page oracle's bounds, from the failure-mode table (docs/failure-modes.md) and the
// shipped SLOs.
const (
	// stalePage: a store stale above the staleness SLO's threshold for
	// this long pages (the 1h/5m burn needs 14.4% of an hour's 2-minute
	// slices bad: 8.6 minutes, plus a slice and an evaluation).
	stalePage = 12 * time.Minute
	// burnWarmup: a burn-rate page needs half of its long window on record
	// (the fast burn's: 30 of 60 minutes since the resource's series
	// began, as a fresh install's; README, "a fresh install cannot page on
	// minutes of data"), plus an evaluation and a slice
	burnWarmup = 31 * time.Minute
	// stallPage: a watch that stopped delivering pages RvsyncWatchStalled
	// within about 5½ minutes; a minute of slack.
	stallPage = 6*time.Minute + 30*time.Second
	// unreadStallPage: the same for a quiet resource's watch whose cache
	// no read of the informer's is known to move (the freshness reads
	// off, or on HTTP/1.1, see unread): a healthy session of it may
	// hear nothing until its timeout (client-go's reflector asks for 5 to
	// 10 minutes), so its stall is known only past that
	// (docs/failure-modes.md, watch stalled)
	unreadStallPage = stallPage + 10*time.Minute
	// never: a deadline no run reaches (nothing owed)
	never = time.Duration(1<<63 - 1)
	// justifyWithin: a page is justified by something bad within the
	// longest page window before it fired (6h) and its short window.
	justifyWithin = 6*time.Hour + 30*time.Minute
)

// CheckPages judges the pages the shipped rules fired on a history
// against its truth. A page is false when nothing was wrong with its
// resource in the window its alert reads: no informer's store stale above
// the staleness threshold, no watch that stopped delivering for longer
// than the stall condition, no watch cache that stopped following etcd, no
// lost history; a CRD that is deleted is not wrong. A page is missed when
// a store stayed stale above the threshold for stalePage (its resource
// versions integers and its server sending bookmarks: otherwise its
// staleness is unknown by design),
// or a watch with bookmarks stopped delivering for
// stallPage, while the resource was served, and its resource did not page
// by then.
//
// The latency SLOs (List latency, canary delivery) measure requests, not
// the store: their pages are justified by a fault that slows or stops
// requests (a hung, slow, frozen, refused or restarting path) in the
// window, whatever the store's truth; an RV-lag page, by a fault that
// delays the resource's deliveries. A stall page, and a staleness page
// where no read moves the resource's quiet cache and its etcd sends no
// progress notifications, are justified while a watch of it waits for its
// cache to move (model.Tx.Waiting): no client can tell it from a stalled
// one.
func CheckPages(h History, scrapes []Scrape, fired []Firing) []Violation {
	if len(scrapes) == 0 {
		return nil
	}
	var out []Violation
	for _, res := range resourcesOf(scrapes) {
		bad := badTimes(scrapes, res, h)
		var pages []Firing
		for _, f := range fired {
			if f.Page() && f.Resource == res {
				pages = append(pages, f)
			}
		}
		for _, f := range pages {
			if requestSLO(f.Alert) && h.requestFaultWithin(f.From-justifyWithin, f.From) {
				continue
			}
			if f.Alert == "RvsyncResourceVersionLagBudgetBurn" && h.deliveryFaultWithin(res, f.From-justifyWithin, f.From) {
				continue
			}
			if f.Alert == "RvsyncWatchStalled" && within(bad.waiting, f.From-stallPage, f.From) {
				// a live watch its server sends nothing until its watch
				// cache moves (model.Tx.Waiting: on an etcd nobody writes
				// to, freshness reads move nothing) cannot be told from a
				// stalled one: a stated limitation (docs/failure-modes.md)
				continue
			}
			if f.Alert == "RvsyncCacheStalenessBudgetBurn" && h.unread(res) && h.progressless(res) && within(bad.waiting, f.From-justifyWithin, f.From) {
				// nothing proves a quiet cache fresh where no read moves it
				// and its etcd sends no progress notifications: a watch its
				// server sends nothing until the cache moves cannot be told
				// from a stalled one, and the staleness, a bound, grows for
				// as long as nobody writes (seed 380810); a stated
				// limitation (README, Limits)
				continue
			}
			if f.Alert == "RvsyncInformerAheadOfHead" && h.unsettledRes(res) {
				// a resource of another etcd in a configured space that
				// nothing settles (no Start, or a still world) may stay
				// ahead of its space's head: the state's runbook names it
				// as the cause (the recovery row's waiver; page seed
				// 1000145: events on their own etcd, `space:` omitted, a
				// monitor without Start)
				continue
			}
			if !bad.within(f.From-justifyWithin, f.From) {
				out = append(out, Violation{At: f.From, Resource: res, Rule: "false page", Detail: fmt.Sprintf("%v while nothing was wrong with it for %v before", f, justifyWithin)})
			}
		}
		for _, run := range bad.runs {
			if run.to-run.from < run.deadline {
				continue
			}
			paged := false
			for _, f := range pages {
				if f.From <= run.from+run.deadline && f.To >= run.from {
					paged = true
				}
			}
			if !paged {
				out = append(out, Violation{At: run.from + run.deadline, Resource: res, Rule: "missed page",
					Detail: fmt.Sprintf("%s from %v to %v, no page by %v", run.what, goDuration(run.from), goDuration(run.to), goDuration(run.from+run.deadline))})
			}
		}
	}
	for _, f := range fired {
		if f.Page() && f.Resource == "" {
			out = append(out, Violation{At: f.From, Rule: "false page", Detail: fmt.Sprintf("%v names no resource", f)})
		}
	}
	return out
}

// badRun is a stretch of a resource's history during which one thing was
// continuously wrong with it, and how soon that must page.
type badRun struct {
	what     string
	from, to time.Duration
	deadline time.Duration
}

// badSpans are when a resource was wrong in a way that justifies a page.
type badSpans struct {
	at      []time.Duration // scrapes at which something was wrong
	runs    []badRun
	waiting []time.Duration // scrapes at which a watch was waiting for its cache to move
}

func (b badSpans) within(from, to time.Duration) bool { return within(b.at, from, to) }

// within reports whether one of times is in [from, to].
func within(times []time.Duration, from, to time.Duration) bool {
	for _, t := range times {
		if t >= from && t <= to {
			return true
		}
	}
	return false
}

// badTimes walks a resource's truth: stale stores, watches that stopped
// delivering (a stall justifies a page once longer than the stall
// condition), watch caches that stopped following etcd, and lost
// histories.
//
// h says whether the resource's watch cache sends bookmarks (its watch
// gives a sign of life every minute while it delivers).
func badTimes(scrapes []Scrape, res string, h History) badSpans {
	bookmarks := h.bookmarks(res)
	stalePage, stallPage := stalePage, stallPage
	if h.unread(res) {
		stallPage = unreadStallPage
	}
	if h.opaque(res) || !bookmarks {
		stalePage = never // its staleness is unknown by design
	}
	var b badSpans
	start := scrapes[0].At
	threshold := time.Duration(slo.DefaultStalenessThresholdSeconds * float64(time.Second))
	var staleFrom, stallFrom time.Duration = -1, -1
	// heardBefore: the watch had a bookmark before the stall under way
	// began; knownFrom: since when that stall is one a client can tell
	heardBefore, knownFrom := false, time.Duration(-1)
	// a watch that never had a bookmark (an etcd nobody writes to never
	// moves its watch cache past the watch's start) looks like one whose
	// server sends none: its stall is judged by its sessions, later than
	// the bookmark cadence allows (docs/failure-modes.md, no_bookmarks); no page is owed
	// by stallPage, though one is justified
	heard, stallDeadline, staleDeadline := false, stallPage, stalePage
	closeRun := func(from *time.Duration, to time.Duration, what string, deadline time.Duration) {
		if *from >= 0 {
			b.runs = append(b.runs, badRun{what: what, from: *from, to: to, deadline: deadline})
		}
		*from = -1
	}
	for _, s := range scrapes {
		t := s.At.Sub(start)
		rt, ok := s.Truth[res]
		if !ok {
			continue
		}
		stale, stalled, lost, stuck := false, false, rt.CachesLost, false
		// unknowable: every stalled watch of it resumed above its cache
		unknowable := true
		// a store stale only for a restore's reverts it lacks, with no
		// canary to write below the reads, is stale where no RV tells
		// (docs/simulation.md: staleness is waived while
		// a restore cannot be seen): a page is justified, none owed
		unseen := len(h.Setup.canariesOn(h.etcdOf(res))) == 0
		for _, in := range rt.Informers {
			if rt.Exists && s.At.Sub(in.Fresh) > threshold {
				stale = true
				unseen = unseen && in.Reverted
			}
			// (not in.Bookmarks: a watch that is not live gets none)
			if rt.Exists && !in.Live && bookmarks {
				stalled = true
				unknowable = unknowable && in.ResumedAbove
			}
			heard = heard || in.Bookmarks
			if in.Waiting {
				b.waiting = append(b.waiting, t)
			}
			if !rt.Exists && !in.Live {
				// a deleted resource's watch ends: not a stall
				continue
			}
			// a store that has not listed since its etcd was restored may
			// hold objects of the lost history: nothing proves otherwise
			// until it lists (docs/how-it-measures.md, RV regressions)
			lost = lost || in.LostHistory || in.Reverted || h.restoredSince(res, in.ListTaken, start, t)
			// a watch cache that stopped following etcd misses whatever is
			// written next: a page on it is justified, written to or not
			stuck = stuck || rt.Exists && in.Stuck
		}
		if stale {
			if staleFrom < 0 {
				staleFrom, staleDeadline = t, max(stalePage, burnWarmup-t)
				if unseen {
					staleDeadline = never
				}
			}
		} else {
			closeRun(&staleFrom, t, "stale above the threshold", staleDeadline)
		}
		// a watch resumed above its cache hears nothing, and its server
		// ends its sessions on time, as a healthy watch's whose cache
		// does not move: where no read moves the cache and no head tells
		// whether etcd moved (non-integer RVs), no client can tell them
		// apart, and a page is justified, none owed (seed 375032)
		unknowable = unknowable && h.unread(res) && h.opaque(res)
		if stalled {
			if stallFrom < 0 {
				stallFrom, stallDeadline, heardBefore, knownFrom = t, never, heard, -1
			}
			switch {
			case !heardBefore:
			case !unknowable:
				// owed a stallPage after it became one a client can tell
				if knownFrom < 0 {
					knownFrom = t
				}
				stallDeadline = min(stallDeadline, knownFrom-stallFrom+stallPage)
			case t-stallFrom < stallDeadline:
				// it turned unknowable before its page was due
				stallDeadline, knownFrom = never, -1
			}
		} else {
			closeRun(&stallFrom, t, "watch not delivering", stallDeadline)
		}
		if stale || lost || stuck || (stallFrom >= 0 && t-stallFrom >= stallAfter) {
			b.at = append(b.at, t)
		}
	}
	end := scrapes[len(scrapes)-1].At.Sub(start)
	closeRun(&staleFrom, end, "stale above the threshold", staleDeadline)
	closeRun(&stallFrom, end, "watch not delivering", stallDeadline)
	return b
}

// resourcesOf returns the resources the truth knows, sorted.
func resourcesOf(scrapes []Scrape) []string {
	seen := map[string]bool{}
	for _, s := range scrapes {
		for res := range s.Truth {
			seen[res] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// requestSLO reports whether alert is the burn of an SLO on request
// latency.
func requestSLO(alert string) bool {
	return alert == "RvsyncListLatencyBudgetBurn" || alert == "RvsyncCanaryDeliveryBudgetBurn"
}

// requestFaultWithin reports whether a fault that slows or stops requests
// was in effect at some time in [from, to].
func (h History) requestFaultWithin(from, to time.Duration) bool {
	for _, f := range h.Faults {
		switch f.Kind {
		case Hang, Slow, SlowServer, Freeze, Refuse, Restart, Restore, Cutoff:
			if f.Start <= to && f.End() >= from {
				return true
			}
		}
	}
	return false
}

// deliveryFaultWithin reports whether a fault that delays what the
// watches of res deliver was in effect at some time in [from, to]: its
// informers' connection slowed, frozen, hung or refused, an API server
// slowed, restarting or cut off etcd, its watch cache stuck. The RV-lag SLO counts
// revisions: on a busy cluster a delivery 2 s late is thousands behind, a
// true burn though the store is fresh within the staleness threshold.
func (h History) deliveryFaultWithin(res string, from, to time.Duration) bool {
	for _, f := range h.Faults {
		delays := false
		switch f.Kind {
		case Slow, Freeze, Hang, Refuse:
			delays = f.Host == HostInformers
		case SlowServer, Restart, Cutoff:
			delays = true
		case Stuck:
			delays = f.Resource == res
		}
		if delays && f.Start <= to && f.End() >= from {
			return true
		}
	}
	return false
}

// restoredSince reports whether the etcd of res was restored after
// listed and by t (since start, the history's start).
func (h History) restoredSince(res string, listed, start time.Time, t time.Duration) bool {
	etcd := h.etcdOf(res)
	for _, f := range h.Faults {
		if f.Kind == Restore && (f.Etcd == etcd || f.Etcd == "" && etcd == "main") && f.Start <= t && listed.Before(start.Add(f.Start)) {
			return true
		}
	}
	return false
}

// watched returns the resource named res that h watches; ok false when
// it watches none.
func (h History) watched(res string) (r Watched, ok bool) {
	for _, r := range h.Setup.Resources {
		if r.Name() == res {
			return r, true
		}
	}
	return Watched{}, false
}

// unsettledRes is unsettled for the watched resource named res.
func (h History) unsettledRes(res string) bool {
	r, ok := h.watched(res)
	return ok && h.unsettled(r)
}

// etcdOf returns the etcd res is stored in (the main one for a resource
// h does not watch: Watched's EtcdName of no resource).
func (h History) etcdOf(res string) string {
	r, _ := h.watched(res)
	return r.EtcdName()
}

// bookmarks reports whether the watch cache of res sends bookmarks (a
// resource h does not watch: false).
func (h History) bookmarks(res string) bool {
	r, ok := h.watched(res)
	return ok && !r.NoBookmarks
}

// readsUncounted reports whether the monitor counts on none of its
// freshness reads to reach its watches' API servers: they are off, or on
// HTTP/1.1, where a pool's connections may reach other servers than the
// watch's (behind one API server too: the monitor cannot tell how many
// they reach).
func (h History) readsUncounted() bool {
	return h.Setup.NoFreshnessReads || h.Setup.HTTP1
}

// unread reports whether res is a quiet resource (nothing loads it) whose
// watch caches no read of the monitor is known to move (readsUncounted;
// page seed 3700079, see unreadStallPage).
func (h History) unread(res string) bool {
	if !h.readsUncounted() {
		return false
	}
	for _, l := range h.Loads {
		if l.Resource == res {
			return false
		}
	}
	return true
}

// progressless reports whether the etcd of res sends no watch progress
// notifications (storage that does not implement them; etcd itself sends
// one every 10 minutes at least by default): nothing but writes and
// consistent reads moves its quiet watch caches.
func (h History) progressless(res string) bool {
	etcd := h.etcdOf(res)
	for _, e := range h.Setup.Etcds {
		if e.Name == etcd {
			return e.ProgressNotify == 0
		}
	}
	return false
}

// opaque reports whether res has resource versions that are not integers
// (an extension API server's): its staleness is unknown by design (docs/metrics.md,
// "rvsync_resource_state": opaque_rv), so no staleness page is owed; nor
// for a resource whose server sends no bookmarks (no_bookmarks: a quiet
// cache cannot be proven fresh).
func (h History) opaque(res string) bool {
	r, _ := h.watched(res)
	return r.Opaque
}
