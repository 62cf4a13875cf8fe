package proof

import (
	"math"
	"testing"
	"time"
)

// A resource the API server stopped serving stays unserved through
// failures of another kind (its server restarting) until a list succeeds:
// its silence means nothing meanwhile.
func TestUnservedUntilAListSucceeds(t *testing.T) {
	var w Watch
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(1))
	w.WatchOpened(sec(1), time.Time{}, 0)
	w.WatchEnded(sec(100))
	w.ListStarted(sec(100), true)
	w.ListFailed(true) // 404: the CRD was deleted
	if !w.Unserved() {
		t.Fatal("a 404 list: not unserved")
	}
	w.ListFailed(false) // 503: the API server restarts
	if !w.Unserved() {
		t.Error("a 503 after the 404 made the resource served again")
	}
	if _, ok := w.Silence(sec(500)); ok {
		t.Error("silence exported while the resource is not served")
	}
	w.ListEnded(sec(600))
	if w.Unserved() {
		t.Error("unserved after a list succeeded")
	}
}

// A watch without bookmarks that reopened after a stall settles it once
// it ran resumeSettle; one with bookmarks waits for its next bookmark.
func TestResumedAfterAStall(t *testing.T) {
	var w Watch
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(1))
	w.WatchOpened(sec(1), time.Time{}, 0)
	w.WatchEnded(sec(700)) // silent 699s: longer than the cadence allows
	w.WatchOpened(sec(701), time.Time{}, 0)
	if _, ok := w.Resumed(sec(703)); ok {
		t.Error("resumed 2s after the watch reopened")
	}
	if got, ok := w.Resumed(sec(710)); !ok || !got.Equal(sec(701)) {
		t.Errorf("Resumed = %v, %v; want the reopening at 701s", got, ok)
	}
	w.WatchEnded(sec(1000))
	w.WatchOpened(sec(1001), time.Time{}, 0)
	if got, ok := w.Resumed(sec(1002)); !ok || !got.Equal(sec(701)) {
		t.Errorf("a later session of the same resumed watch: Resumed = %v, %v; want 701s still", got, ok)
	}
	w.Received(sec(1010), true)
	if _, ok := w.Resumed(sec(1020)); ok {
		t.Error("a watch with bookmarks counts as resumed")
	}
}

// A stream that breaks is no sign of life: a watch-list attempt that a
// stalled connection held until it broke, or a watch cut before the
// timeout it asked for, says nothing of the server. Only a watch its
// server ends at that timeout does (it used to reset the silence every
// time a held watch-list attempt broke, so a stalled informer never
// looked stalled).
func TestABrokenStreamIsNoSignOfLife(t *testing.T) {
	var w Watch
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(1))
	w.WatchOpened(sec(1), sec(1+300), 0)
	w.Received(sec(50), true)
	// the connection stalls; the watch breaks at 200s, before its timeout
	w.WatchEnded(sec(200))
	if s, _ := w.Silence(sec(200)); s != 150*time.Second {
		t.Errorf("silence %v after a watch broke 150s after its last bookmark, want 150s", s)
	}
	// the reflector relists with a watch-list that the stall holds until
	// the connection breaks
	w.ListStarted(sec(201), true)
	w.WatchEnded(sec(330))
	w.ListFailed(false)
	if s, _ := w.Silence(sec(330)); s != 280*time.Second {
		t.Errorf("silence %v after a held watch-list attempt broke, want 280s", s)
	}
	if !w.Silent(sec(330)) {
		t.Error("not silent 280s after the last bookmark")
	}
	// a watch with bookmarks that the server ends at its timeout, and the
	// one reopened after it, show nothing of its cache: a stuck one ends
	// them on time too
	w.ListEnded(sec(400))
	w.Received(sec(400), true)
	w.WatchOpened(sec(400), sec(460), 0)
	w.WatchEnded(sec(460))
	w.WatchOpened(sec(461), sec(800), 0)
	if s, _ := w.Silence(sec(500)); s != 100*time.Second {
		t.Errorf("silence %v 100s after the last bookmark, the watch ended on time and reopened since; want 100s", s)
	}
	// a watch that never had a bookmark: its server ending it at the
	// timeout is its sign of life
	var nb Watch
	nb.ListStarted(sec(0), true)
	nb.ListEnded(sec(1))
	nb.WatchOpened(sec(1), sec(301), 0)
	nb.WatchEnded(sec(301))
	if s, _ := nb.Silence(sec(301)); s != 0 {
		t.Errorf("silence %v when the server ended a bookmarkless watch at its timeout, want 0", s)
	}
}

// A watch reopened within its cadence (its API server restarted) gets a
// cadence anew for its first bookmark: no stall, though the silence since
// the last bookmark is longer than the cadence; one reopened on a watch
// cache already silent that long does not.
func TestAReopenedWatchGetsItsCadenceAnew(t *testing.T) {
	var w Watch
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(1))
	w.WatchOpened(sec(1), sec(1000), 0)
	w.Received(sec(61), true)
	w.Received(sec(121), true)
	w.WatchEnded(sec(160)) // the API server restarts
	w.WatchOpened(sec(165), sec(1000), 0)
	if w.Silent(sec(225)) {
		t.Error("silent 60s after the watch reopened, before its first bookmark was due")
	}
	w.Received(sec(224), true)
	if w.StalledSince(sec(121), sec(230)) {
		t.Error("a stall seen: the first bookmark of a watch reopened within its cadence came a cadence after it opened")
	}
	// now stuck: no bookmark after 224; the watch ends on time at 500 and
	// reopens on the same stuck cache
	w.WatchEnded(sec(500))
	w.WatchOpened(sec(501), sec(1000), 0)
	if !w.Silent(sec(510)) {
		t.Error("not silent 286s after the last bookmark: a watch reopened on a cache already silent that long proves nothing")
	}
}

// kube-apiserver sends a watch's next bookmark a period after it sent the
// last, whenever that one arrived: a bookmark a frozen connection held
// back does not move the schedule. Predicted from its receipt, the next
// was expected 9s late, the freshness read went out after it, and a cache
// stuck just before showed RV lag 0 for a bookmark period more (simulation
// seed 603496 of 40,000).
func TestADelayedBookmarkKeepsTheServersSchedule(t *testing.T) {
	w := listedAndWatching(sec(600))
	w.Received(sec(60), true)
	w.Received(sec(120.5), true)
	w.Received(sec(191), true) // sent at ~181, held by a 10s freeze
	if next, _ := w.NextBookmark(); next.After(sec(242)) {
		t.Errorf("next bookmark expected at %v, want by 242s (the server sent the last at ~181)", next.Sub(sec(0)))
	}
	w.Received(sec(241.5), true)
	if p := w.Period(); p < 60*time.Second || p > 61*time.Second {
		t.Errorf("bookmark period %v after a delayed one, want the server's ~60.5s", p)
	}
	// a bookmark the server skipped (its cache did not move) arrives a
	// whole period late: the schedule runs from it
	w.Received(sec(362.5), true)
	if next, _ := w.NextBookmark(); next.Before(sec(422)) {
		t.Errorf("next bookmark expected at %v after a skipped one, want ~423s", next.Sub(sec(0)))
	}
}

// kube-apiserver skips a periodic bookmark when its watch cache did not
// move; a quiet resource's cache moves when a freshness read asks etcd for
// progress, and the read goes out just before the next bookmark expected.
// Expected after the median interval, a minute's bookmarks that were
// skipped for want of a read made the next read wait as long, and so on:
// reads and bookmarks every 3 minutes, and a stuck cache's lag shown 103s
// after the change it missed (simulation seed 8127 of 100,000). The
// schedule is the server's period, the shortest interval.
func TestTheNextBookmarkFollowsTheServersPeriod(t *testing.T) {
	w := listedAndWatching(time.Time{})
	w.Received(sec(60.5), true)
	w.Received(sec(240.5), true) // two skipped
	if next, _ := w.NextBookmark(); next.After(sec(302)) {
		t.Errorf("next bookmark expected at %v, want a period after the last (~301s)", next.Sub(sec(0)))
	}
}

// Without freshness reads nothing moves a quiet resource's watch cache
// but etcd's progress notifications (every 10 minutes by default), and the
// API server sends a watch no bookmark until its cache moves past the
// revision the watch started from: a quiet watch reopened at its timeout
// can hear nothing for a whole session, the server ending it on time its
// only sign of life. Judged by the minute's cadence, that silence paged
// RvsyncWatchStalled on live watches missing nothing (simulation pages
// seed 514 of 1,000, page corpus seed 102).
func TestAQuietWatchWithoutReadsMayWaitASession(t *testing.T) {
	w := listedAndWatching(sec(300))
	w.SetReads(false)
	for s := 60.0; s <= 298; s += 60 {
		w.Received(sec(s), true)
	}
	w.WatchEnded(sec(300)) // the server ends it at its timeout
	w.WatchOpened(sec(300), sec(900), 0)
	if w.Silent(sec(800)) {
		t.Errorf("silent at 800s, 500s into a session whose cache nothing moved: want no stall before its end at 900s")
	}
	if c := w.Cadence(sec(800)); c < 600*time.Second {
		t.Errorf("cadence %v without reads, want at least the session's 600s", c)
	}
	if !w.Silent(sec(1300)) {
		t.Error("not silent 400s past the session's end with no sign of life")
	}
	// with reads, the minute's cadence holds
	r := listedAndWatching(sec(300))
	for s := 60.0; s <= 298; s += 60 {
		r.Received(sec(s), true)
	}
	if c := r.Cadence(sec(200)); c > 61*time.Second {
		t.Errorf("cadence %v with reads, want the minute's", c)
	}
}

// A failed freshness read moves the cache no more than none: while the
// latest failed, a quiet session may wait its length, as without reads;
// once one answers, the minute's cadence holds again (sim page seed 327:
// a 15-min hang of the informers' connection, a session reopened silent).
func TestAQuietWatchWhoseReadsFailMayWaitASession(t *testing.T) {
	w := listedAndWatching(sec(300))
	for s := 60.0; s <= 298; s += 60 {
		w.Received(sec(s), true)
	}
	w.ReadEnded(false)
	w.WatchEnded(sec(300)) // the server ends it at its timeout
	w.WatchOpened(sec(300), sec(900), 0)
	if w.Silent(sec(800)) {
		t.Errorf("silent at 800s, 500s into a session whose reads fail: want no stall before its end at 900s (cadence %v)", w.Cadence(sec(800)))
	}
	w.ReadEnded(true)
	if !w.Silent(sec(800)) {
		t.Errorf("not silent at 800s once a read answered: want the minute's cadence (cadence %v)", w.Cadence(sec(800)))
	}
}

// A cache seen to move without the informer's reads (the last bookmarks
// above the heads of the reads before them, no event between: etcd's
// progress notifications are frequent, or other clients read the
// resource; one such bookmark is a coincidence of etcd's 10-minute one) sends
// its bookmarks each period whatever the reads do: once a session's reads
// fail, its silence past a period is a stall, not the quiet session's
// wait. The informers' connection frozen 15 min just after a session
// reopened failed its reads and silenced its watch alike, and the stall
// paged 11 min in instead of 5½ (sim page seed 7401156: etcd's 5-s
// progress notify, 100 writes/s elsewhere).
func TestACacheThatMovesAloneHearsAPeriodWhileReadsFail(t *testing.T) {
	w := listedAndWatching(sec(300))
	for s := 60.0; s <= 298; s += 60 {
		w.ReadAnswered(uint64(1000+s), sec(s-8))
		w.Received(sec(s), true)
		w.BookmarkRV(uint64(1000+s+5), sec(s)) // progress moved it past the read
	}
	w.ReadEnded(false) // the path froze: the read never answers
	w.WatchEnded(sec(300))
	w.WatchOpened(sec(300), sec(900), 0)
	if !w.Silent(sec(380)) {
		t.Errorf("not silent 80s into a session whose cache moves alone, nothing heard (cadence %v): want a stall past the minute", w.Cadence(sec(380)))
	}
	// without that evidence, the quiet session may wait its length
	q := listedAndWatching(sec(300))
	for s := 60.0; s <= 298; s += 60 {
		q.ReadAnswered(uint64(1000+s), sec(s-8))
		q.Received(sec(s), true)
		rv := uint64(1000 + s) // at the read's head: the read moved it
		if s == 240 {
			rv += 5 // once, a progress notification landed in between
		}
		q.BookmarkRV(rv, sec(s))
	}
	q.ReadEnded(false)
	q.WatchEnded(sec(300))
	q.WatchOpened(sec(300), sec(900), 0)
	if q.Silent(sec(380)) {
		t.Errorf("silent 80s into a session whose cache only the reads moved, while they fail (cadence %v): want the session's wait", q.Cadence(sec(380)))
	}
}

// With reads, a quiet watch's cache moves with them, but no further than
// etcd: a session opened at etcd's revision while nobody wrote to it gets
// no bookmark (its cache never moves past the session's start), reads or
// not. Judged by the minute's cadence, it stalled a minute after its last
// sign of life, and when a write to another resource moved the head, its
// RV lag read head minus RV on a store that missed nothing (simulation
// seed 312665: RV lag 1 for 45 s, no fault at all). Its bookmarks are due
// a period after the first read that answered above the session's start.
func TestAQuietSessionHearsAPeriodAfterAReadMovedIt(t *testing.T) {
	w := listedAndWatching(sec(300))
	for s := 60.0; s <= 298; s += 60 {
		w.Received(sec(s), true)
	}
	w.WatchEnded(sec(300)) // the server ends it at its timeout
	w.WatchOpened(sec(300), sec(900), 1049)
	w.ReadEnded(true)
	w.ReadAnswered(1049, sec(360)) // etcd did not move: nor did the cache
	if w.Silent(sec(500)) {
		t.Errorf("silent at 500s, in a session whose reads never saw etcd move past its start (cadence %v)", w.Cadence(sec(500)))
	}
	w.ReadAnswered(1050, sec(520)) // a write elsewhere: the read moves the cache
	if w.Silent(sec(570)) {
		t.Errorf("silent at 570s, 50s after the first read that moved the session's cache (cadence %v)", w.Cadence(sec(570)))
	}
	if !w.Silent(sec(640)) {
		t.Errorf("not silent at 640s, two minutes after a read moved the cache with no bookmark since (cadence %v)", w.Cadence(sec(640)))
	}
}

// A busy resource's watch cache moves with its own writes: a session
// opened while events flowed hears one (or a bookmark) within a period,
// reads or not. After etcd was restored from a backup, with every API
// server restarted, a busy informer's watch resumed above etcd's new
// revision hears nothing at all: judged by whole sessions, as a quiet
// watch without reads may be, it never stalled (an extension resource
// writing 5 objects a second, 29 min blind; simulation page seed 334). A
// watch busy when its session opened keeps the minute's cadence, across
// the silent sessions after it, until it hears something again.
func TestABusyWatchWithoutReadsHearsWithinAPeriod(t *testing.T) {
	w := listedAndWatching(sec(300))
	w.SetReads(false)
	for s := 1.0; s < 300; s++ {
		w.Received(sec(s), math.Mod(s, 60) == 0) // an event a second, a bookmark a minute
	}
	w.WatchEnded(sec(300))
	w.WatchOpened(sec(300), sec(900), 0)
	if !w.Silent(sec(400)) {
		t.Errorf("not silent at 400s, 100s into a session of a busy watch that heard nothing (cadence %v)", w.Cadence(sec(400)))
	}
	w.WatchEnded(sec(900)) // on time: no sign of life from a watch that should hear
	w.WatchOpened(sec(900), sec(1500), 0)
	if !w.Silent(sec(1000)) {
		t.Errorf("not silent at 1000s, in the second session heard nothing since 299s (cadence %v)", w.Cadence(sec(1000)))
	}
	// once it hears again (the resource went quiet meanwhile), a session
	// opened quiet may wait for its end
	w.Received(sec(1010), true)
	w.WatchEnded(sec(1500))
	w.WatchOpened(sec(1500), sec(2100), 0)
	if w.Silent(sec(2000)) {
		t.Errorf("silent at 2000s, in a session opened 490s after the latest event: a quiet watch without reads may wait its session")
	}
}

// listedAndWatching returns a watch listed consistently at 0 and watching
// since, until deadline (zero: none asked).
func listedAndWatching(deadline time.Time) *Watch {
	w := &Watch{}
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(0))
	w.WatchOpened(sec(0), deadline, 0)
	return w
}

// A watch that has had no bookmark yet is judged by its session: the
// server may send none, and ends the session at its timeout. Past that
// timeout, an open session is no longer waited for: the server would have
// ended it, so the path to it is stalled. A pod whose watches stalled 20s
// after they opened, before their first bookmark, kept a cadence of the
// whole session (9 min) and its RvsyncWatchStalled page (3 cadences)
// never came in 8 min (TestCluster in CI).
func TestASessionPastItsTimeoutIsNoLongerWaitedFor(t *testing.T) {
	var w Watch
	w.ListStarted(sec(0), true)
	w.ListEnded(sec(1))
	w.WatchOpened(sec(1), sec(1+540), 0)
	if c := w.Cadence(sec(300)); c != 540*time.Second {
		t.Errorf("cadence %v within the first session, no bookmark yet: want the session's 540s", c)
	}
	if w.Silent(sec(300)) {
		t.Error("silent within a bookmarkless session's timeout")
	}
	at := sec(1 + 540).Add(silentSlack + time.Second)
	if c := w.Cadence(at); c != DefaultBookmarkPeriod {
		t.Errorf("cadence %v with the session open past its timeout, want the bookmark period %v", c, DefaultBookmarkPeriod)
	}
	if !w.Silent(at) {
		t.Error("not silent with the session open past its timeout and nothing heard since the list")
	}
	// a server that sends no bookmarks: the sessions it ended keep the
	// cadence theirs, past the current one's timeout too
	w.WatchEnded(sec(1 + 540))
	w.WatchOpened(sec(541), sec(541+300), 0)
	if c := w.Cadence(sec(541 + 400)); c != 540*time.Second {
		t.Errorf("cadence %v after a 540s session ended on time, want 540s", c)
	}
}
