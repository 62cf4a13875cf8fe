package proof

import (
	"slices"
	"time"
)

// Watch is what an informer's wire shows of its lists and watches: list
// cycles (a relist counted once however many attempts it takes), watch
// sessions, the signs of life a watch gives (an event, a bookmark, a list
// end; for a watch that never had a bookmark, a watch that opens or that
// the server ends at its timeout), its bookmark cadence and its silence.
//
// A live watch gives a sign of life at least once per cadence: its
// bookmark period (kube-apiserver sends a bookmark about once a minute),
// or, for a watch that has never had a bookmark (watch cache off for the
// resource, an extension API server that sends none, a proxy cutting
// streams short), the length of its watch sessions: the server ends each
// at the timeout the reflector asked for, and that end is a sign of life.
// A silence longer than the cadence allows is evidence of a stall.
type Watch struct {
	listed        bool      // the first list was started (and counted)
	listing       bool      // a list cycle is under way: its retries are not new relists
	expired       bool      // the watch ended with 410: the next relist is "expired"
	relistExpired bool      // the list cycle under way follows a 410
	attemptStart  time.Time // first page of the current list attempt
	consistent    bool      // that attempt is a consistent read (RV "")
	unserved      bool      // the latest list attempt found nothing to watch, and none succeeded since
	// readsUnserved: when the first of the latest consistent reads of the
	// resource, on any connection, answered that it is not served, none
	// answering since (zero: none; see ReadUnserved)
	readsUnserved time.Time

	watching bool
	opened   time.Time // the current watch's start
	reopened time.Time // the start of the first watch opened since the latest stall ended
	deadline time.Time // when its timeout ends it; zero: none asked
	life     time.Time // the latest sign of life
	// clock is when the current watch opened, if it opened before the
	// silence was longer than the cadence allows: a new watch's first
	// bookmark is not due before a cadence after it opened
	clock       time.Time
	bookmarkRef time.Time // when the server sent the latest bookmark (see sentAt), or the watch's start
	received    time.Time // when the latest bookmark arrived, or the watch's start
	held        time.Time // when the latest bookmark held on the way (see sentAt) arrived
	periods     [maxPeriods]time.Duration
	nPeriods    int
	bookmarks   bool      // a bookmark ever arrived
	heard       bool      // the current watch session had a bookmark
	lastEvent   time.Time // when the latest event (not a bookmark) arrived
	// busy: the current session opened while events flowed (one within a
	// period before it), or after such a session that heard nothing: its
	// watch cache moves with its resource's own writes, so it hears within
	// a period, reads or not (see Cadence)
	busy bool
	// noReads: no freshness read goes out before each bookmark expected
	// to move a quiet resource's watch cache, so its server may skip
	// periodic bookmarks for want of movement (see SetReads)
	noReads bool
	// readFailed: the latest freshness read did not answer, so it moved
	// nothing either (see ReadEnded)
	readFailed bool
	// startRV is the RV the current watch session opened at (0: unknown);
	// movedAt, when a freshness read first answered above it in this
	// session. Until one does, no read has moved the session's watch cache
	// past its start (etcd did not move), and its server skips its
	// periodic bookmarks for want of movement, reads or not (see Cadence)
	startRV uint64
	movedAt time.Time
	// readHead is the head the latest freshness read on the watch's own
	// connection answered, until the next bookmark judges it (0: none),
	// and eventSinceRead whether an event arrived since. aloneRun counts
	// the latest bookmarks in a row that arrived above the head of the
	// read before them with no event between, the latest at movesAlone:
	// the watch cache moved past each read without this informer (etcd's
	// progress notifications are frequent, or others read the resource),
	// so its bookmarks are due whatever moves it (see alone)
	readHead       uint64
	eventSinceRead bool
	aloneRun       int
	movesAlone     time.Time
	// bookmarkless counts the watch sessions longer than a bookmark period
	// that ended without a bookmark while none ever arrived: evidence that
	// the server sends none
	bookmarkless int
	sessions     [maxSessions]time.Duration
	nSessions    int
	stallEnded   time.Time // when a sign of life ended the latest silence longer than the cadence allows
	broken       time.Time // when the latest watch session ended before its timeout (broken, or ended by an error)
}

// Bookmark cadence defaults and limits.
const (
	// DefaultBookmarkPeriod is kube-apiserver's watch bookmark period.
	DefaultBookmarkPeriod = time.Minute
	// maxCadence is the longest cadence a watch is granted: the longest
	// watch client-go's reflector asks for (a timeout drawn from 5 to 10
	// minutes) ends within it, and a quiet watch cache that only etcd's
	// progress notifications move (every 10 minutes by default) moves
	// within it.
	maxCadence = 10 * time.Minute
	// bookmarkTick is how late a bookmark may come on its own: the
	// cacher's 1s dispatch tick and a moment on the wire.
	bookmarkTick = 2 * time.Second
	// silentSlack is how far past its cadence a sign of life may come late
	// (the cacher's 1s dispatch tick, a slow connection) before the
	// silence is evidence.
	silentSlack = 10 * time.Second
	// PreTimeoutBookmarkLead is how long before a watch's timeout
	// kube-apiserver sends it a last bookmark (k8s.io/apiserver's
	// cacheWatcher.nextBookmarkTime).
	PreTimeoutBookmarkLead = 2 * time.Second
	// maxPeriods is how many of the latest intervals between bookmarks
	// give the period (their shortest) and the cadence (their median): the
	// server skips a bookmark when its cache did not move, so one interval
	// may be a multiple of the period.
	maxPeriods = 5
	// maxSessions is how many of the latest watch sessions give the
	// cadence of a watch without bookmarks (their longest): client-go's
	// reflector draws each session's timeout anew.
	maxSessions = 3
)

// Relist reasons (the catalog's values).
const (
	RelistInitial = "initial"
	RelistExpired = "expired"
	RelistError   = "error"
)

// ListStarted records the first page of a List, or a watch-list, at now;
// consistent when it reads at RV "" (it then holds everything committed
// before now). It returns the reason of the relist it starts, or "" when
// it is an attempt of a cycle under way (retries after 429, a 410 retried
// at RV "", a watch-list falling back to List).
func (w *Watch) ListStarted(now time.Time, consistent bool) string {
	w.attemptStart, w.consistent = now, consistent
	if w.listing {
		return ""
	}
	w.listing = true
	reason := RelistInitial
	switch {
	case !w.listed:
		w.listed = true
	case w.expired:
		reason = RelistExpired
	default:
		reason = RelistError
	}
	w.relistExpired, w.expired = w.expired, false
	return reason
}

// ListEnded records a list's last page (or a watch-list's initial-events-
// end bookmark) at now. It returns when the list began, and whether it was
// a consistent read (it held everything committed by then).
func (w *Watch) ListEnded(now time.Time) (began time.Time, consistent bool) {
	w.listing, w.unserved, w.relistExpired = false, false, false
	w.readsUnserved = time.Time{}
	w.live(now)
	w.bookmarkRef, w.received = now, now
	return w.attemptStart, w.consistent
}

// ListFailed records a failed list attempt; unserved when the API server
// does not serve the resource (a CRD deleted) or forbids listing it. A
// failure of another kind (the server restarting) does not say it serves
// the resource again: only a list that succeeds does.
func (w *Watch) ListFailed(unserved bool) { w.unserved = w.unserved || unserved }

// ReadUnserved records that a consistent read of the resource (a head
// probe or a freshness read, on any connection) answered at at that the
// API server does not serve it (a CRD deleted). A watch that was open
// then may not learn it: on a connection that stopped carrying bytes
// (HTTP/1.1 has no keepalive of its own), the server's end of the stream
// is lost, and client-go's reflector waits on it without a deadline
// (simulation seeds 1305071 and 1318303: a CRD deleted while the
// informers' connection was frozen, its watch "stalled" for minutes while
// every read said 404).
func (w *Watch) ReadUnserved(at time.Time) {
	if w.readsUnserved.IsZero() || w.life.After(w.readsUnserved) { // a run of them since the watch last spoke
		w.readsUnserved = at
	}
}

// ReadServed records that a consistent read of the resource answered.
func (w *Watch) ReadServed() { w.readsUnserved = time.Time{} }

// Unserved reports whether there is nothing to watch: a list attempt
// found nothing (see ListFailed) and none succeeded since, or the reads
// of the resource say it is not served (see ReadUnserved) and the watch
// gave no sign of life since they first did. Silence means nothing then.
func (w *Watch) Unserved() bool {
	return w.unserved || !w.readsUnserved.IsZero() && !w.life.After(w.readsUnserved)
}

// WatchOpened records that a watch (or a watch-list past its initial
// events) streams from now on, until deadline (zero: no timeout asked),
// from the RV start (0: unknown, then every answered read counts as
// moving its cache; see ReadAnswered).
func (w *Watch) WatchOpened(now, deadline time.Time, start uint64) {
	if w.bookmarks && !w.Silent(now) {
		w.clock = now
	}
	w.busy = !w.lastEvent.IsZero() && now.Sub(w.lastEvent) <= w.Period() ||
		w.busy && !w.heard && w.lastEvent.Before(w.opened)
	w.watching, w.opened, w.deadline, w.bookmarkRef, w.received, w.heard = true, now, deadline, now, now, false
	w.startRV, w.movedAt = start, time.Time{}
	if !w.bookmarks {
		w.live(now) // a watch with bookmarks shows its life by them
	}
	if w.reopened.Before(w.stallEnded) || w.reopened.IsZero() {
		w.reopened = now // the first watch since the latest stall ended
	}
}

// WatchEnded records that a stream ended at now: a watch, or a watch-list
// attempt that never got past its initial events. For a watch that never
// had a bookmark, its server ending it at the timeout it asked for is a
// sign of life of the path to the server; a stream that ended otherwise
// says nothing of it (a stalled connection holds a stream until the
// connection breaks, and client-go closes the stream alike whether the
// server closed it or the connection broke), and a watch with bookmarks
// shows its life by them (a server whose watch cache is stuck still ends
// its watches on time, and the reflector reopens them there).
func (w *Watch) WatchEnded(now time.Time) {
	if !w.watching {
		return // a watch-list attempt: its failure is ListFailed's
	}
	if !w.opened.IsZero() {
		d := now.Sub(w.opened)
		w.sessions[w.nSessions%len(w.sessions)] = d
		w.nSessions++
		if !w.bookmarks && d > DefaultBookmarkPeriod+silentSlack {
			w.bookmarkless++
		}
	}
	onTime := !w.deadline.IsZero() && !now.Before(w.deadline.Add(-silentSlack))
	if (!w.bookmarks || w.unmoved() && !w.busy) && onTime {
		w.live(now) // the server ended it on time (judged while it was open)
	}
	if !onTime {
		w.broken = now
	}
	w.watching = false
}

// resumeSettle is how long a watch reopened after a stall runs before its
// opening counts as the end of the stall's effect (the server sends the
// events since the informer's RV at once on opening).
const resumeSettle = 5 * time.Second

// Resumed returns when the first watch opened after the latest stall
// ended, when its server sends no bookmarks and resumeSettle has passed
// since: the server sent every event since the informer's RV on opening,
// so the stall left nothing behind that the watch cache had; ok is false
// otherwise (a watch with bookmarks waits for the next one).
func (w *Watch) Resumed(now time.Time) (time.Time, bool) {
	if w.bookmarks || w.stallEnded.IsZero() || w.reopened.Before(w.stallEnded) || now.Sub(w.reopened) < resumeSettle {
		return time.Time{}, false
	}
	return w.reopened, true
}

// WatchError records an error of a watch call or event; expired for 410.
func (w *Watch) WatchError(expired bool) {
	if expired && !w.listing {
		w.expired = true
	}
}

// Received records an event (bookmark false) or a bookmark received at now.
func (w *Watch) Received(now time.Time, bookmark bool) {
	w.live(now) // judged by the cadence that held during the silence
	if !bookmark {
		w.lastEvent, w.eventSinceRead = now, true
		return
	}
	sent := w.sentAt(now)
	if sent.Before(now) {
		w.held = now
	}
	if !w.bookmarkRef.IsZero() {
		w.periods[w.nPeriods%len(w.periods)] = sent.Sub(w.bookmarkRef)
		w.nPeriods++
	}
	w.bookmarks, w.heard, w.bookmarkRef, w.received, w.busy = true, true, sent, now, false
}

// sentAt is when the server sent a bookmark received at now, as far as
// its schedule says: the API server sends the next a period after it sent
// the last, however late that one arrived, so one that arrives late by
// more than the dispatch tick but less than half a period was held on the
// way (a frozen or slow connection) and was sent when it was due; one a
// whole period late was skipped by the server (its cache did not move)
// and the schedule runs from it.
func (w *Watch) sentAt(now time.Time) time.Time {
	if !w.bookmarks {
		return now
	}
	due, ok := w.NextBookmark()
	if late := now.Sub(due); ok && late > bookmarkTick && late < w.Period()/2 {
		return due
	}
	return now
}

func (w *Watch) live(now time.Time) {
	if !w.life.IsZero() && w.overdue(now) {
		w.stallEnded = now
	}
	if now.After(w.life) {
		w.life = now
	}
}

// Cadence is how often a live watch gives a sign of life by now: the
// median of the latest intervals between bookmarks, never below
// kube-apiserver's minute (the API server promises a bookmark at least that
// often, not at most: it also sends early ones after a watch-list's
// initial events and one 2s before a watch's timeout); for a watch that
// has not had one (yet: a server that sends none, or a watch younger than
// a bookmark period), the longest of its recent sessions, or the timeout
// the current one asked for while it lasts: the server ends each session,
// a sign of life, so one open past its timeout has a stalled path.
//
// Without freshness reads (SetReads), or while they fail (ReadEnded),
// nothing but etcd's progress notifications moves a quiet resource's
// watch cache, and its server sends
// no bookmark until the cache moves past the watch's start (then one each
// period): while a session that has had no bookmark yet is open, within
// its timeout, the cadence is that session's length, its end on time the
// only sign of life it may give. A session still open past its timeout is
// no longer waited for. Not so a busy watch's (see busy): its resource's
// own writes move its cache, so it hears within a period; silent for
// longer, it resumed where its cache does not reach (above a restored
// etcd's revision) or its server stopped (writes that stop just as a
// session opens look alike, until etcd's progress or a write moves the
// cache). Nor one whose cache was lately seen to move without this
// informer's reads (see alone): etcd's progress notifications, or other
// clients' reads, move it, so a silence past a period is a stall even
// while the reads fail (a frozen connection fails them too).
func (w *Watch) Cadence(now time.Time) time.Duration {
	if !w.bookmarks {
		return min(max(w.longestSession(now), DefaultBookmarkPeriod), maxCadence)
	}
	c := DefaultBookmarkPeriod
	if n := min(w.nPeriods, len(w.periods)); n > 0 {
		p := slices.Clone(w.periods[:n])
		slices.Sort(p)
		c = max(p[len(p)/2], c)
	}
	if w.unmoved() && !w.busy && !w.alone(now) && w.watching && !w.heard && !w.deadline.IsZero() && now.Before(w.deadline.Add(silentSlack)) {
		c = max(c, w.deadline.Sub(w.opened))
	}
	return min(c, maxCadence)
}

// alone reports whether the watch cache moves without this informer's
// reads (BookmarkRV): at least the last two bookmarks after a read found
// it moved past the read, the latest within the longest cadence before
// now. Then a session's bookmarks are due each period, read or not. One
// is no evidence: etcd's progress notification (every 10 minutes by
// default) lands between a read and its bookmark now and then.
func (w *Watch) alone(now time.Time) bool {
	return w.aloneRun >= 2 && now.Sub(w.movesAlone) <= maxCadence
}

// longestSession returns the longest of the recent watch sessions and the
// timeout the current one asked for (0: none known), unless it is open
// past that timeout by now: its server would have ended it.
func (w *Watch) longestSession(now time.Time) time.Duration {
	var longest time.Duration
	for _, d := range w.sessions[:min(w.nSessions, len(w.sessions))] {
		longest = max(longest, d)
	}
	if w.watching && !w.deadline.IsZero() && now.Before(w.deadline.Add(silentSlack)) {
		longest = max(longest, w.deadline.Sub(w.opened))
	}
	return longest
}

// SetReads says whether a freshness read goes out before each bookmark
// expected (the default; see Cadence).
func (w *Watch) SetReads(on bool) { w.noReads = !on }

// ReadEnded records whether the latest freshness read on the watch's own
// connection answered: one that did not moved nothing (see Cadence).
func (w *Watch) ReadEnded(answered bool) { w.readFailed = !answered }

// unmoved reports whether nothing but etcd's progress notifications moves
// a quiet resource's watch cache: no freshness reads go out, or the latest
// failed, or none answered above the RV the session opened at yet (etcd
// did not move since: a read moves the cache no further than etcd).
func (w *Watch) unmoved() bool {
	return w.noReads || w.readFailed || w.startRV != 0 && w.movedAt.IsZero()
}

// ReadAnswered records that a freshness read on the watch's own
// connection answered head at at. The first one above the session's start
// moves its watch cache past it: the server's periodic bookmarks are due
// from then, a period after at the latest, not from before (its server
// skipped them while its cache sat at the session's start).
func (w *Watch) ReadAnswered(head uint64, at time.Time) {
	w.readHead, w.eventSinceRead = head, false
	if !w.watching || w.startRV == 0 || !w.movedAt.IsZero() || head <= w.startRV {
		return
	}
	// a busy session's cache moves with its resource's own writes: its
	// bookmarks were due all along (see Cadence); a silence already too
	// long stays so
	if w.bookmarks && !w.busy && !w.heard && !w.Silent(at) {
		w.clock = maxTime(w.clock, at)
	}
	w.movedAt = at
}

// BookmarkRV records the RV of the bookmark Received at now: above the
// head of the latest freshness read with no event since, it shows the
// watch cache moves without this informer's reads (see Cadence).
func (w *Watch) BookmarkRV(rv uint64, now time.Time) {
	switch {
	case w.readHead == 0 || w.eventSinceRead:
		// no read to judge, or a write of the resource moved the cache
	case rv > w.readHead:
		w.aloneRun, w.movesAlone = w.aloneRun+1, now
	default:
		w.aloneRun = 0
	}
	w.readHead = 0
}

// Period is the API server's bookmark period as the watch shows it: the
// shortest of the latest intervals between bookmarks, never below
// kube-apiserver's minute, and that minute until two intervals are known.
// The server skips a bookmark when its watch cache did not move past the
// watch's start (an etcd nobody wrote to), so an interval may be a
// multiple of the period (the first one often is); the shortest is the
// period.
func (w *Watch) Period() time.Duration {
	n := min(w.nPeriods, len(w.periods))
	if !w.bookmarks || n < 2 {
		return DefaultBookmarkPeriod
	}
	return min(max(slices.Min(w.periods[:n]), DefaultBookmarkPeriod), maxCadence)
}

// Bookmarkless reports whether the watch's server has shown it sends no
// bookmarks: a session ran longer than a bookmark period without one, and
// none ever came.
func (w *Watch) Bookmarkless() bool { return !w.bookmarks && w.bookmarkless > 0 }

// Bookmarks reports whether the watch ever had a bookmark.
func (w *Watch) Bookmarks() bool { return w.bookmarks }

// Silence returns how long the watch has given no sign of life; ok is
// false before its first list ended or while there is nothing to watch.
func (w *Watch) Silence(now time.Time) (time.Duration, bool) {
	if w.life.IsZero() || !w.listed || w.Unserved() {
		return 0, false
	}
	return max(0, now.Sub(w.life)), true
}

// Silent reports whether the watch has been silent longer than its
// cadence allows (a list cycle under way, too: until it completes, the
// store lacks what was committed since): what it holds may lack
// everything committed since. A watch that ended with 410 is silent at
// once until a relist completes: it cannot resume, and the relist
// may wait a long backoff (client-go's reflector shares one backoff
// between its watch retries and its relists: after an API server refused
// connections through a restart, up to a minute).
func (w *Watch) Silent(now time.Time) bool {
	if w.expired && !w.watching && !w.listing || w.listing && w.relistExpired {
		return true
	}
	_, ok := w.Silence(now)
	return ok && w.overdue(now)
}

// overdue reports whether no sign of life came for longer than the cadence
// allows by now: since the latest, or since the current watch opened if
// the silence was within the cadence then (a watch reopened, the server
// restarted, sends its first bookmark a cadence after it opened; one that
// reopened on a watch cache that was already silent that long proves
// nothing by opening).
func (w *Watch) overdue(now time.Time) bool {
	return now.Sub(maxTime(w.life, w.clock)) > w.Cadence(now)+silentSlack
}

// QuietOrStalled reports whether the watch is silent longer than its
// cadence allows in a session that opened busy and has had nothing since,
// on a watch cache that nothing but its resource's own writes moves (no
// freshness read reaches it, and it was not seen to move alone): writes
// that stop just as a session opens leave its server nothing to send
// until etcd's next progress notification (10 minutes by default), as a
// stopped server sends nothing. The silence says the store may miss
// everything since its RV, not that it does.
func (w *Watch) QuietOrStalled(now time.Time) bool {
	return w.watching && w.busy && !w.heard && !w.lastEvent.After(w.opened) && w.unmoved() && !w.alone(now) && w.Silent(now)
}

// StalledSince reports whether the watch was silent longer than its
// cadence allows at some point after t (or is now).
func (w *Watch) StalledSince(t, now time.Time) bool {
	return w.stallEnded.After(t) || w.Silent(now)
}

// IncidentAt returns when the watch's path last had an incident: a
// silence past the cadence ended, or a session broke (zero: none).
func (w *Watch) IncidentAt() time.Time { return maxTime(w.stallEnded, w.broken) }

// BrokenSince reports whether a watch session ended before its timeout
// after t: the watch reopened, and a reopened watch gets its cadence anew,
// so a silence across the reopen never counts as a stall. Sessions the
// server ended on time say nothing of the sort.
func (w *Watch) BrokenSince(t time.Time) bool { return w.broken.After(t) }

// Listing reports whether a list cycle is under way.
func (w *Watch) Listing() bool { return w.listing }

// Watching reports whether a watch streams.
func (w *Watch) Watching() bool { return w.watching }

// NextBookmark returns when the open watch's next bookmark is due: a
// period (Period) after the latest, or the one before the watch's timeout
// if that comes first; ok is false when none is expected (no watch, or one whose
// server has shown it sends none).
func (w *Watch) NextBookmark() (time.Time, bool) {
	if !w.watching || (!w.bookmarks && w.bookmarkless > 0) {
		return time.Time{}, false
	}
	// the server's period, not the median interval: a bookmark it skipped
	// (its cache did not move, for want of a read) is no reason to read
	// later
	next := w.bookmarkRef.Add(w.Period())
	if !w.deadline.IsZero() {
		if pre := w.deadline.Add(-PreTimeoutBookmarkLead); pre.Before(next) && !pre.Before(w.bookmarkRef) {
			next = pre
		}
	}
	return next, true
}

// DueAfter returns when the first bookmark the open watch's schedule
// (NextBookmark, then a period apart) has due at or after t; ok as
// NextBookmark's.
func (w *Watch) DueAfter(t time.Time) (time.Time, bool) {
	next, ok := w.NextBookmark()
	if !ok {
		return time.Time{}, false
	}
	for p := w.Period(); next.Before(t); {
		next = next.Add(p)
	}
	return next, true
}

// Unmet reports whether, by now, the watch should have delivered a
// revision its watch cache had by at (a consistent read's head answered
// then, or a change of its resource a sibling informer delivered then), if
// its cache follows etcd: the first bookmark due after at+DispatchSlack
// carries it (a periodic bookmark carries the revision the cache's
// dispatcher last processed, whatever the watch's scope), or a cadence
// after at if that comes first, and silentSlack more.
func (w *Watch) Unmet(at, now time.Time) bool {
	wait := w.Cadence(now)
	if due, ok := w.DueAfter(at.Add(DispatchSlack)); ok && w.Bookmarks() && due.Sub(at) < wait {
		wait = due.Sub(at)
	}
	return now.Sub(at) > wait+silentSlack
}

// Held reports whether the bookmark received at received was held on the
// way (a slow or frozen connection: see sentAt), as far as the latest
// such bookmark tells.
func (w *Watch) Held(received time.Time) bool {
	return !w.held.IsZero() && w.held.Equal(received)
}

// LastBookmark returns the latest bookmark's receipt (or the watch's
// start).
func (w *Watch) LastBookmark() time.Time { return w.received }
