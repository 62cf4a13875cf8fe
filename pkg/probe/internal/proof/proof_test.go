package proof

import (
	"testing"
	"time"
)

// A store that listed while writes landed below the reads (a restore the
// API servers were restarted after, before the head probe caught up) is
// judged once the loss ends: the reads share the writes' history again,
// so its list was of that history too. Until then it proves nothing; after,
// bookmarks prove it fresh (it used to stay "ahead of the head", its
// staleness growing for as long as the watch lived).
func TestAListDuringALossCountsOnceTheLossEnds(t *testing.T) {
	sp, w, p, env := listedAt1000()
	for i := 1; i <= 20; i++ { // the old history: a head sample and a delivery every 5s
		rv := uint64(1000 + 10*i)
		sp.Sample(0, rv, true, sec(float64(5*i)), sec(float64(5*i)), true)
		w.Received(sec(float64(5*i)), false)
		p.ApplyEvent(rv, env(sec(float64(5*i))))
	}
	// etcd restored to 900; a write lands below the reads (1200)
	if !sp.Write(905, sec(101), false) {
		t.Fatal("a write below the reads did not prove the loss")
	}
	w.WatchEnded(sec(102))
	// the informer relists from a restarted API server, above the old head
	w.ListStarted(sec(110), true)
	p.ApplyList(1210, w.ListEnded(sec(111)), env(sec(111)))
	if lost, _ := sp.HistoryLost(); !lost {
		t.Fatal("no loss while the reads are above the writes")
	}
	if v := p.Snapshot(env(sec(112))); !v.Ahead {
		t.Error("a list during the loss counted before the loss ended")
	}
	w.WatchOpened(sec(111), time.Time{})
	// a write lands above the reads: the loss is over
	sp.Sample(0, 1215, true, sec(115), sec(115), true)
	sp.Write(1220, sec(116), false)
	if lost, _ := sp.HistoryLost(); lost {
		t.Fatal("still lost after a write above the reads")
	}
	for i := 0; i < 10; i++ {
		at := sec(float64(120 + 10*i))
		rv := uint64(1225 + 5*i)
		sp.Sample(0, rv, true, at, at, true)
		w.Received(at.Add(time.Second), true)
		p.ApplyBookmark(rv, env(at.Add(time.Second)))
	}
	now := sec(220)
	v := p.Snapshot(env(now))
	if v.Ahead {
		t.Error("still ahead of the head after the loss ended and bookmarks followed the head")
	}
	if !v.FreshKnown || now.Sub(v.Fresh) > 15*time.Second {
		t.Errorf("staleness %v after bookmarks at the head every 10s, want under 15s", now.Sub(v.Fresh))
	}
}

// A watch that ended with 410 cannot resume: until the informer lists
// again its store lacks everything committed since its RV, however soon
// the watch ended. client-go's reflector waits out one backoff shared by
// its watch retries and its relists, so after an API server refused
// connections through a restart the relist can come a minute late; the
// lag used to stay 0 through it, the watch's end counting as a sign of
// life (seeds 73, 347, 634 and 998 of the simulation's short run once the
// model refused connections as a real dialer does).
func TestLagOnceAWatchExpired(t *testing.T) {
	sp, w, p, env := listedAt1000()
	for i := 1; i <= 10; i++ { // a delivery at the head every 5s
		rv := uint64(1000 + 10*i)
		sp.Sample(0, rv, true, sec(float64(5*i)), sec(float64(5*i)), true)
		w.Received(sec(float64(5*i)), false)
		p.ApplyEvent(rv, env(sec(float64(5*i))))
	}
	if v := p.Snapshot(env(sec(51))); !v.LagKnown || v.Lag != 0 {
		t.Fatalf("lag %v (known %v) while delivering at the head, want 0", v.Lag, v.LagKnown)
	}
	// the API server restarts: the watch breaks, retries are refused
	w.WatchEnded(sec(52))
	sp.Sample(0, 1150, true, sec(80), sec(80), true)
	// the server is back with a new watch cache: the watch from the
	// informer's RV gets 410 and ends
	w.WatchOpened(sec(85), time.Time{})
	w.WatchError(true)
	w.WatchEnded(sec(85))
	sp.Sample(0, 1200, true, sec(90), sec(90), true)
	if v := p.Snapshot(env(sec(90))); !v.LagKnown || v.Lag != 100 {
		t.Errorf("5s after the watch expired, before the relist: lag %v (known %v), want head - RV = 100", v.Lag, v.LagKnown)
	}
	// the relist catches up
	w.ListStarted(sec(140), true)
	p.ApplyList(1260, w.ListEnded(sec(141)), env(sec(141)))
	w.WatchOpened(sec(141), time.Time{})
	sp.Sample(0, 1260, true, sec(145), sec(145), true)
	if v := p.Snapshot(env(sec(146))); !v.LagKnown || v.Lag != 0 {
		t.Errorf("after the relist: lag %v (known %v), want 0", v.Lag, v.LagKnown)
	}
}

// listedAt1000 is an informer that listed at RV 1000 at 1s and watches
// on, in a space whose head source is 0; env is its surroundings at an
// instant.
func listedAt1000() (sp *Space, w *Watch, p *Proof, env func(time.Time) Env) {
	sp = NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	w, p = &Watch{}, &Proof{}
	env = func(at time.Time) Env {
		return Env{Now: at, Space: sp, Watch: w, ProbeInterval: 5 * time.Second, OwnReads: true}
	}
	w.ListStarted(sec(0), true)
	p.ApplyList(1000, w.ListEnded(sec(1)), env(sec(1)))
	w.WatchOpened(sec(1), time.Time{})
	return sp, w, p, env
}
