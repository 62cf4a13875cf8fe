package proof

import (
	"slices"
	"testing"
	"time"
)

// A restore is counted once, whichever sees it first. When the head probe
// sees the head go back first (its reads served by a watch cache of the
// lost history, lower than the head before), the canary's next write lands
// at etcd's revision, below what those reads saw: that is the same loss,
// not a second one, even when a write sent before the restore answers in
// between (simulation seeds 101244, 113488, 107484: 2 regressions counted
// for 1 restore). A write below the reads after a
// write of the new history landed is a new loss.
func TestARestoreTheReadsSawFirstCountsOnce(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	for i := 1; i <= 10; i++ {
		sp.Sample(0, uint64(3000+20*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
		sp.Write(uint64(3001+20*i), sec(float64(5*i)+1), false)
	}
	// etcd restored to 2000; a stuck watch cache still serves 3100
	if v := sp.Sample(0, 3100, true, sec(55), sec(55), true); !v.Regressed || v.Known {
		t.Fatalf("verdict %+v: the head going back was not a regression of its own", v)
	}
	// a write sent before the restore, answered after the reads went back
	// (a slow connection): of the lost history
	sp.Write(3230, sec(54.5), false)
	if sp.Write(2001, sec(57), false) {
		t.Error("the first write after the reads went back counted the same restore again")
	}
	if lost, _ := sp.HistoryLost(); !lost {
		t.Error("a write below the reads did not mark them as of a lost history")
	}
	// the caches catch up: the reads agree with the writes again
	if v := sp.Sample(0, 2002, true, sec(60), sec(60), true); v.Regressed && !v.Known {
		t.Errorf("verdict %+v: the reads catching up with the loss counted it again", v)
	}
	sp.Write(2010, sec(61), false)
	sp.Sample(0, 2010, true, sec(62), sec(62), true)
	sp.Write(2020, sec(63), false)
	// a second restore: a write below the reads of the new history
	if !sp.Write(1500, sec(70), false) {
		t.Error("a second restore, seen by a write below the new history's reads, was not counted")
	}
}

// Where nothing samples the head (a monitor whose Start never runs), the
// writes are all a space reads of etcd: a write below an earlier one
// proves a loss, and one above everything the lost history showed ends it,
// so that a list taken during the loss counts once nothing contradicts it
// (simulation seed 371240: informers that listed after a restore and an
// API server restart stayed ahead_of_head for good). Where a head probe
// reads, a write above the lost history's head before any read of the new
// one ends nothing: the reads may still come from caches frozen above it.
func TestAWriteAboveTheLostHistoryEndsALossNothingReads(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	for i := range 5 {
		sp.Write(uint64(3001+20*i), sec(float64(10*i)), false)
	}
	if !sp.Write(1000, sec(50), true) {
		t.Fatal("a write below the writer's previous one was not counted as a restore")
	}
	sp.Write(2000, sec(60), false)
	if lost, _ := sp.HistoryLost(); !lost {
		t.Error("a write below the lost history's head ended the loss")
	}
	sp.Write(3100, sec(70), false)
	if lost, _ := sp.HistoryLost(); lost {
		t.Error("a write above everything the lost history showed did not end the loss where nothing reads the head")
	}
	if sp.Write(3050, sec(80), false) {
		t.Error("a write below the head a write showed, not below an earlier write of its own, counted a restore")
	}

	probed := NewSpace(64, sec(0), 5*time.Second)
	probed.AddSource(0)
	for i := range 5 {
		probed.Sample(0, uint64(3001+20*i), true, sec(float64(10*i)), sec(float64(10*i)), true)
		probed.Write(uint64(3002+20*i), sec(float64(10*i)+1), false)
	}
	if !probed.Write(1000, sec(50), false) {
		t.Fatal("a write below the reads was not counted as a restore")
	}
	probed.Write(3100, sec(60), false)
	if lost, _ := probed.HistoryLost(); !lost {
		t.Error("where a head probe reads, a write above the lost history's head ended the loss before any read of the new history")
	}
}

// After a restore that the API servers were not restarted after, each
// server's watch cache stays at its own revision of the lost history until
// etcd passes it. The head probe (its connection pinned to one server)
// and an informer's freshness read (on its own connection, maybe to
// another) then see different frozen heads, neither moving: that is no
// new restore, in either order (simulation seed 100642: a regression
// counted every minute, at each freshness read).
func TestFrozenCachesOfTwoServersAreNoRegression(t *testing.T) {
	for _, c := range []struct {
		name         string
		probe, fresh uint64
	}{{"the freshness read's server ahead", 3340, 3360}, {"the probe's server ahead", 3360, 3340}} {
		t.Run(c.name, func(t *testing.T) {
			sp := NewSpace(64, sec(0), 5*time.Second)
			sp.AddSource(0)
			regressions := 0
			for i := 1; i <= 60; i++ {
				at := sec(float64(5 * i))
				rv, probe := c.probe, true
				if i%12 == 0 {
					rv, probe = c.fresh, false
				}
				if v := sp.Sample(0, rv, true, at, at.Add(100*time.Millisecond), probe); v.Regressed {
					regressions++
				}
			}
			if regressions != 0 {
				t.Errorf("%d regressions counted while two frozen caches answered", regressions)
			}
		})
	}
}

// A write below a head only another source saw (a resource whose watch
// cache stayed frozen at its revision of a history etcd lost, answering
// its freshness reads) proves nothing of the space's history: the
// reference's heads are what a write is judged against (simulation seed
// 103623: the canary's writes below a frozen cache's 3473 counted a
// second and a third restore).
func TestAWriteBelowAnotherSourcesHeadIsNoLoss(t *testing.T) {
	sp := twoSources()
	for i := 1; i <= 10; i++ {
		at := sec(float64(5 * i))
		sp.Sample(0, uint64(1000+50*i), true, at, at, true)
		sp.Write(uint64(1001+50*i), at.Add(time.Second), false)
	}
	// source 1's cache answers a revision the reference's history has not
	// reached (frozen in a history etcd lost)
	sp.Sample(1, 3473, true, sec(52), sec(52), false)
	if sp.Write(1600, sec(53), false) {
		t.Error("a write below a head only another source saw counted a loss")
	}
	if lost, _ := sp.HistoryLost(); lost {
		t.Error("a write below a head only another source saw marked the history lost")
	}
	// a write below the reference's own head is a loss
	sp.Sample(0, 1700, true, sec(55), sec(55), true)
	if !sp.Write(1650, sec(56), false) {
		t.Error("a write below the reference's head was not a loss")
	}
}

// What a restore left behind stays bounded by the lost history's latest
// write for good: the writes of the new history fill the ring of writes
// (32), and once the lost history's were out of it a store that never
// relisted was proven fresh up to 5s after the restore again (simulation
// seed 108111: staleness 357s with changes missing for 366s, 320s after
// the restore).
func TestTheLostHistorysBoundOutlivesItsWrites(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	for i := 1; i <= 10; i++ {
		at := sec(float64(10 * i))
		sp.Sample(0, uint64(1000+i), true, at, at, true)
		sp.Write(uint64(1001+i), at.Add(time.Second), false)
	}
	lost := sp.Epoch()
	want := sp.SameHistoryAt(1010, sec(100), lost)
	if !want.Equal(sec(101)) {
		t.Fatalf("the lost history's bound is %v, want its latest write's request, 101s", want.Sub(sec(0)))
	}
	if !sp.Write(5, sec(115), false) {
		t.Fatal("a write below the reads was not a loss")
	}
	for i := 1; i <= 40; i++ {
		at := sec(float64(115 + 10*i))
		sp.Sample(0, uint64(5+i), true, at, at, true)
		sp.Write(uint64(6+i), at.Add(time.Second), false)
	}
	if got := sp.SameHistoryAt(1010, sec(100), lost); !got.Equal(want) {
		t.Errorf("after 40 writes of the new history the lost one's bound is %v, want %v", got.Sub(sec(0)), want.Sub(sec(0)))
	}
}

// A restore settled by another source's lower sample (while the
// reference's lower samples were held) begins the new history at the
// reference's: the other source may still read a watch cache of the lost
// history, above the new head, and the reference's next samples below it
// counted a second restore (simulation seed 401432).
func TestARestoreSettledByAnotherSourceStartsAtTheReference(t *testing.T) {
	sp := twoSources()
	for i := 1; i <= 10; i++ {
		at := sec(float64(5 * i))
		sp.Sample(0, uint64(213000+1000*i), true, at, at, true)
	}
	regressions := 0
	count := func(v Verdict) {
		if v.Regressed && !v.Known {
			regressions++
		}
	}
	count(sp.Sample(0, 189000, true, sec(56), sec(56), true)) // held
	count(sp.Sample(0, 189000, true, sec(61), sec(61), true)) // held
	count(sp.Sample(1, 220000, true, sec(63), sec(63), false))
	for i := 1; i <= 6; i++ { // the reference's new history rises
		at := sec(float64(63 + 5*i))
		count(sp.Sample(0, uint64(189000+8000*i), true, at, at, true))
	}
	if regressions != 1 {
		t.Errorf("%d restores counted for one", regressions)
	}
}

// After a restore, two resources' watch caches frozen at the same revision
// of the lost history answer their freshness reads alike, above the new
// history: the reference's next sample below them truncates them as it
// does one source's, and is no second restore (simulation seed 421893).
func TestTwoFrozenCachesAboveAreNoRestore(t *testing.T) {
	sp := spaceOfSources(3)
	for i := 1; i <= 10; i++ {
		at := sec(float64(5 * i))
		sp.Sample(0, uint64(i), true, at, at, true)
	}
	sp.Sample(1, 1022, true, sec(51), sec(51), false)
	sp.Sample(2, 1022, true, sec(51.5), sec(51.5), false)
	if v := sp.Sample(0, 11, true, sec(55), sec(55), true); v.Regressed {
		t.Errorf("verdict %+v: two frozen caches above the reference made a restore", v)
	}
	for i := 1; i <= 3; i++ {
		at := sec(float64(55 + 5*i))
		if v := sp.Sample(0, uint64(11+i), true, at, at, true); v.Regressed {
			t.Errorf("verdict %+v at %v: a restore counted", v, at.Sub(sec(0)))
		}
	}
}

// When the reference fails over to another source, the head is the next
// accepted sample's, whoever answers first: it stayed the old reference's
// last head until the new one answered, and lag read head - RV against a
// head from before a 2-minute probe hang (simulation seed 422495: lag 0
// with 8 changes missing for 82s).
func TestTheHeadAfterAFailover(t *testing.T) {
	sp := twoSources()
	probeRising(sp, 1010, 1)
	for i := 0; i < refFailover; i++ { // the probe of the reference hangs
		sp.Failed(0)
	}
	sp.Sample(0, 1031, true, sec(180), sec(183), true) // the old reference answers first
	if head, _, ok := sp.Head(); ok && head != 1031 {
		t.Errorf("head %d after the failover and a sample of 1031, want 1031 (or unknown)", head)
	}
}

// The canary's resource, anchored as the reference, reads the etcd the
// canary writes to: it stays settled when the reference fails over, as
// when every source failed through an API server's restart. It was
// unsettled, and the canary's writes to it counted nothing until the
// samples confirmed it again: a restore right after the restart, its watch caches frozen above
// etcd's new history, went unseen (simulation seed 1051548: staleness 3 s
// while the caches lacked 273 changes).
func TestTheCanarysAnchorStaysSettled(t *testing.T) {
	sp := twoSources()
	if !sp.Anchor(0) {
		t.Fatal("source 0 could not be anchored")
	}
	probeRising(sp, 1010, 1)
	for i := 0; i < refFailover; i++ { // the API server restarts: every read fails
		sp.Failed(0)
		sp.Failed(1)
	}
	if ref := sp.Reference(); ref != 1 {
		t.Fatalf("reference %d after %d failures of source 0; want the failover to 1", ref, refFailover)
	}
	if settled, _ := sp.Settled(0); !settled {
		t.Errorf("source 0, the canary's anchor, is not settled after the failover: the canary's writes would prove nothing")
	}
}

// Nor is the anchor ever contradicted into a space of its own: after a
// failover the new reference may be the one of another etcd, or read a
// frozen cache of a lost history; the canary's writes define the space
// (simulation seed 1007935: the anchor found foreign after a restore, its
// next write counted the restore again in its own space).
func TestTheCanarysAnchorIsNeverForeign(t *testing.T) {
	sp := twoSources()
	if !sp.Anchor(0) {
		t.Fatal("source 0 could not be anchored")
	}
	probeRising(sp, 1010, 1)
	for i := 0; i < refFailover; i++ { // the anchor's probe is refused
		sp.Failed(0)
	}
	head := uint64(2000)
	for i := 0; i < 2*foreignAfter+2; i++ { // the new reference above the anchor, both moving
		at := 60 + 5*float64(i)
		head += 10
		if v := sp.Sample(1, head, true, sec(at), sec(at), true); slices.Contains(v.Foreign, 0) {
			t.Fatalf("the anchor was found foreign at %vs", at)
		}
		sp.Sample(0, head-500+uint64(i), true, sec(at+1), sec(at+1), false)
	}
	if !slices.Contains(sp.Sources(), 0) {
		t.Errorf("the anchor left the space: sources %v", sp.Sources())
	}
}

// A restore while the reference's probe fails: the reference fails over
// to another resource, whose first answers are below the old reference's
// head. That alone may be another etcd (a margin of settleAfter samples
// waits for it to say), but the new reference had answered higher itself
// before: one resource's consistent reads never go back within a
// history, so its etcd went back. The margin let a restore 100 revisions
// back pass unseen: the new history climbed past the old head within two
// samples, and a watch resumed above the lost writes missed them
// (simulation seed 232487: staleness 3.6 s while the cache lacked 9
// changes, the oldest 44 s old).
func TestANewReferenceBelowItsOwnEarlierReadIsARestore(t *testing.T) {
	sp := twoSources()
	probeRising(sp, 1900, 10)
	// a freshness read of the other resource, above the head (one below
	// it would be contradicted by the next probe: a source that never
	// takes the reference's role, see TestADoubtedSourceIsNoReferenceAfterAFailover)
	sp.Sample(1, 2005, true, sec(52), sec(52), false)
	sp.Sample(0, 2010, true, sec(55), sec(55), true)
	for i := 0; i < refFailover; i++ { // etcd restored: the reference's probe is refused
		sp.Failed(0)
	}
	v := sp.Sample(1, 1964, true, sec(80), sec(80), true)
	if !v.Regressed || v.Known {
		t.Fatalf("verdict %+v: a new reference below its own earlier read (1964 < 2005) is a restore", v)
	}

	// without a read of its own above, one lower sample of a new reference
	// is not yet a restore: it may read another etcd
	sp = twoSources()
	sp.Sample(0, 2010, true, sec(55), sec(55), true)
	for i := 0; i < refFailover; i++ {
		sp.Failed(0)
	}
	if v := sp.Sample(1, 1964, true, sec(80), sec(80), true); v.Regressed {
		t.Errorf("verdict %+v: one lower sample of a new reference with no read of its own before counted a restore", v)
	}
}

// After a restore, the reads may go back first to a watch cache frozen in
// the lost history (below the head before, above etcd's), then to etcd's
// revision: one loss, counted once. The second fall was counted as a new
// restore though the history the first one began never moved (simulation
// seed 631432: 2 regressions counted, 1 restore). A fall after the new
// history moved on is a new restore.
func TestReadsFallingTwiceThroughAFrozenCacheCountOnce(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	for i := 1; i <= 10; i++ {
		sp.Sample(0, uint64(19000+60*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
	}
	regressions := 0
	count := func(v Verdict) {
		if v.Regressed && !v.Known {
			regressions++
		}
	}
	// etcd restored to 1000; the probe's server's cache, frozen at 19116
	// of the lost history, answers for a while
	for i := 11; i <= 16; i++ {
		count(sp.Sample(0, 19116, true, sec(float64(5*i)), sec(float64(5*i)), true))
	}
	// then etcd's own history, moving on, above the lost one's head (19,600)
	for i := 17; i <= 40; i++ {
		count(sp.Sample(0, uint64(18000+100*(i-17)), true, sec(float64(5*i)), sec(float64(5*i)), true))
	}
	if regressions != 1 {
		t.Errorf("%d regressions counted for one restore seen through a frozen cache, want 1", regressions)
	}
	// a second restore of the history that moved on
	count(sp.Sample(0, 5000, true, sec(205), sec(205), true))
	if regressions != 2 {
		t.Errorf("%d regressions counted after a second restore, want 2", regressions)
	}
}

// Behind a balancer on HTTP/1.1, with no canary, the head probe's pooled
// connections land on any server: after a restore the reads go up and
// down between caches frozen at different revisions of the lost history
// and etcd's new one. Until they go above the lost history's head they
// may all be of it: one loss, counted once (simulation seed 2751095:
// caches frozen at 21,400 and 21,900, etcd restored 5,000 back; the one
// restore counted three times). Once etcd's history outgrew the lost
// one, a fall is a new restore.
func TestReadsBetweenFrozenCachesOfALostHistoryCountOneLoss(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	for i := 1; i <= 10; i++ {
		sp.Sample(0, uint64(16900+500*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
	}
	var n losses
	// etcd restored to 16,900 at 52 s, growing 500 each 5 s: caches frozen
	// at 21,400 and 21,900 answer in turn with it
	etcd := func(at float64) uint64 { return uint64(16900 + 100*(at-52)) }
	for i, frozen := range []uint64{21400, 21400, 21900, 21400, 21900, 0, 21400, 0} {
		at := float64(55 + 5*i)
		rv := frozen
		if rv == 0 {
			rv = etcd(at)
		}
		n.sample(sp.Sample(0, rv, true, sec(at), sec(at), true))
	}
	if n != 1 {
		t.Errorf("%d losses counted for one restore read through caches frozen at two revisions of the lost history, want 1", n)
	}
	secondRestoreCounts(t, sp, &n, etcd, 95, 150)
}

// After a restore another source's cache, frozen in the lost history
// later than the head probe last read it, answers above the reads that
// fell: a provisional head, which shows nothing of the new history (no
// write, no probe of the reference's saw it). When the reference then
// falls to etcd's restored history it is the same loss (simulation seed
// 3766864: no canary, the deployments' cache stuck at 22,900, the
// configmaps' frozen at 23,900, the head probe's last read 23,700, etcd
// restored 5,000 back; the one restore counted twice).
func TestAnotherSourcesFrozenCacheAboveTheFallIsTheSameLoss(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	sp.AddSource(1)
	for i := 1; i <= 10; i++ {
		sp.Sample(0, uint64(18700+500*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
		sp.Sample(1, uint64(18700+500*i), true, sec(float64(5*i)+1), sec(float64(5*i)+1), false)
	}
	var n losses
	// etcd restored at 52 s to 18,700; the probe's server's cache of
	// source 0, stuck at 22,900, answers its consistent read
	n.sample(sp.Sample(0, 22900, true, sec(53), sec(53), true))
	// source 1's cache, frozen at 23,900 of the lost history
	n.sample(sp.Sample(1, 23900, true, sec(54), sec(54), false))
	n.sample(sp.Sample(1, 23900, true, sec(55), sec(55), false))
	// the server restarted: etcd's restored history, growing 100 a second
	etcd := func(at float64) uint64 { return uint64(18700 + 100*(at-52)) }
	for at := 90.0; at <= 100; at += 5 {
		n.sample(sp.Sample(0, etcd(at), true, sec(at), sec(at), true))
	}
	if n != 1 {
		t.Errorf("%d losses counted for one restore, another source's frozen cache answering above the fall, want 1", n)
	}
	secondRestoreCounts(t, sp, &n, etcd, 105, 180)
}

// secondRestoreCounts has the reference (source 0) read etcd's history
// from from to to seconds, each 5 s, outgrowing the lost one, then fall to
// 20,000 (a second restore): n, one loss counted so far, must count it.
func secondRestoreCounts(t *testing.T, sp *Space, n *losses, etcd func(at float64) uint64, from, to float64) {
	t.Helper()
	for at := from; at <= to; at += 5 {
		sp.Sample(0, etcd(at), true, sec(at), sec(at), true)
	}
	n.sample(sp.Sample(0, 20000, true, sec(to+5), sec(to+5), true))
	if *n != 2 {
		t.Errorf("%d losses counted after a second restore of the history that outgrew the lost one, want 2", *n)
	}
}

// After a restore the reads may go back to a watch cache frozen in the
// lost history, and the canary's writes, of etcd's restored history, then
// land below what those reads say: the same loss, counted once. A write
// below the reads that fell did not move the history they began on
// (simulation seed 2001186: the head probe's server's cache stuck at
// 1020, the canary at 1022, etcd restored to 922; the reads fell to 1020,
// the first write after it, answered before any head of the new epoch was
// confirmed, landed at 923, and the next one, at 924, counted a second
// restore). A write below the reads after a write above them is a new
// restore.
func TestWritesBelowReadsThatFellToAFrozenCacheCountNoSecondLoss(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	sp.Anchor(0)
	var n losses
	for i := 1; i <= 10; i++ {
		n.write(sp.Write(uint64(1000+2*i), sec(float64(10*i)), false))
		sp.Sample(0, uint64(1000+2*i), true, sec(float64(10*i+5)), sec(float64(10*i+5)), true)
	}
	// the probe's server's cache stuck at 1018 while the canary writes 1020;
	// etcd restored to 922: the reads fall to the stuck cache
	n.write(sp.Write(1022, sec(110), false))
	n.sample(sp.Sample(0, 1018, true, sec(113), sec(113), true))
	// the canary's writes of the restored history land below the reads;
	// the first one's answer, on a slow connection, comes after a read
	// answered once it was sent: it is not judged (it may have committed
	// before the read)
	next := 923
	for i := 0; i < 6; i++ {
		at := 118 + 10*float64(i)
		recv := at - 2
		if i == 0 {
			recv = at + 1
		}
		n.sample(sp.Sample(0, 1018, true, sec(recv-1), sec(recv), true))
		n.write(sp.Write(uint64(next), sec(at), false))
		next++
	}
	if n != 1 {
		t.Errorf("%d losses counted for one restore whose reads fell to a frozen cache, want 1", n)
	}
	// the stuck cache restarted: the reads follow the writes, which land
	// above them; then a second restore
	for i := 0; i < 4; i++ {
		at := 180 + 10*float64(i)
		sp.Sample(0, uint64(next-1), true, sec(at), sec(at), true)
		n.write(sp.Write(uint64(next), sec(at+1), false))
		next++
	}
	n.write(sp.Write(500, sec(230), false))
	if n != 2 {
		t.Errorf("%d losses counted after a second restore of the history that moved on, want 2", n)
	}
}

// After a restore, a source that takes the reference's role (the
// reference's resource deleted, its reads failing) may read a watch cache
// frozen in the history lost, above what the exporter saw of it: until a
// write lands above its reads, a write below them is the same loss (simulation seed 2111838: configmaps, the
// canary's resource, deleted after the restore counted; deployments took
// over reading its cache of the lost history, and its canary's next write
// counted the restore again). A write below its reads after one above them
// is a new restore.
func TestAReferenceThatTookOverAfterALossReadingTheLostHistoryCountsItOnce(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0) // configmaps, the canary's
	sp.AddSource(1) // deployments, a second canary's
	sp.Anchor(0)
	var n losses
	for i := 1; i <= 10; i++ {
		sp.Sample(0, uint64(20000+40*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
		sp.Sample(1, uint64(20000+40*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
		n.write(sp.Write(uint64(20001+40*i), sec(float64(5*i)+1), false))
	}
	// etcd restored to 200: the canary's next write lands below
	n.write(sp.Write(206, sec(57), false))
	if n != 1 {
		t.Fatalf("%d losses counted for the restore, want 1", n)
	}
	// configmaps' cache restarted: its reads follow etcd, the writes land
	// above them
	sp.Sample(0, 1200, true, sec(60), sec(60), true)
	n.write(sp.Write(1300, sec(61), false))
	sp.Sample(0, 1400, true, sec(65), sec(65), true)
	// configmaps deleted: its reads fail, deployments takes over, reading
	// its watch cache frozen in the lost history
	for i := 0; i < refFailover; i++ {
		sp.Failed(0)
	}
	next := uint64(2000)
	for i := 0; i < 6; i++ {
		at := 70 + 10*float64(i)
		sp.Sample(1, 20450, true, sec(at), sec(at), true) // above the 20401 written before the restore
		n.write(sp.Write(next, sec(at+2), false))
		next += 1000
	}
	newReferenceCountsOneLossThenTwo(t, sp, &n, 20500, 20600, 300, 135)
}

// A write that lands above the old reference's reads, before the source
// that took its role over first answered, says nothing of the new
// reference's reads: they may come from a watch cache frozen in the
// history lost, and a write below them is the same loss until one lands
// above them (simulation seed 4036651: the reads fell to 2 after a
// restore, the head probe was refused, gadgets took over reading its
// cache frozen at 1,031 on an API server cut off etcd, and the canary's
// write at 9 counted the restore again; its writes at 4 and 5 had landed
// above the old reference's reads at 2 first).
func TestAWriteBeforeTheNewReferenceAnsweredLeavesItsReadsInTheLoss(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0) // configmaps, the canary's
	sp.AddSource(1) // gadgets
	var n losses
	for i := 1; i <= 10; i++ {
		at := sec(float64(5 * i))
		n.sample(sp.Sample(0, uint64(1000+3*i), true, at, at, true))
		n.sample(sp.Sample(1, uint64(1000+3*i), true, at.Add(time.Second), at.Add(time.Second), false))
	}
	// etcd restored to 2: the reference reads it
	for at := 55.0; at <= 70; at += 5 {
		n.sample(sp.Sample(0, 2, true, sec(at), sec(at), true))
	}
	if n != 1 {
		t.Fatalf("%d losses counted for the restore the reads saw, want 1", n)
	}
	// gadgets' freshness reads, from a cache frozen in the lost history
	n.sample(sp.Sample(1, 1031, true, sec(72), sec(72), false))
	// the head probe refused: gadgets takes the reference's role
	for i := 0; i < refFailover; i++ {
		sp.Failed(0)
	}
	// the canary's writes land above the old reference's reads, before
	// the new one answered
	n.write(sp.Write(4, sec(75), false))
	n.write(sp.Write(5, sec(85), false))
	next := uint64(8)
	for at := 90.0; at <= 140; at += 10 {
		n.sample(sp.Sample(1, 1031, true, sec(at), sec(at), true))
		n.write(sp.Write(next, sec(at+2), false))
		next++
	}
	newReferenceCountsOneLossThenTwo(t, sp, &n, 1100, 1200, 50, 150)
}

// newReferenceCountsOneLossThenTwo checks that n counted one loss while
// the reference that took over (source 1) read the lost history, then has
// its cache catch up (reading caught at at), a write land above its reads
// (at above), and a second restore (a write at fallTo): n must count it.
func newReferenceCountsOneLossThenTwo(t *testing.T, sp *Space, n *losses, caught, above, fallTo uint64, at float64) {
	t.Helper()
	if *n != 1 {
		t.Errorf("%d losses counted for one restore, a new reference reading the lost history after it, want 1", *n)
	}
	sp.Sample(1, caught, true, sec(at), sec(at), true)
	n.write(sp.Write(above, sec(at+1), false))
	sp.Sample(1, above, true, sec(at+5), sec(at+5), true)
	n.write(sp.Write(fallTo, sec(at+7), false))
	if *n != 2 {
		t.Errorf("%d losses counted after a second restore of the history its reads shared, want 2", *n)
	}
}

// After a restore under a running API server, a second canary's
// resource whose watch cache stays frozen in the lost history reads above
// the reference, which reads etcd's new history: its contradictions say
// nothing of its etcd while its own canary's writes land below its own
// reads (in one history a write commits above every read of its resource
// answered before it was sent). It was found foreign, moved to a space of
// its own headed by its frozen cache, and its canary's next write counted
// the restore again (simulation seed 2400492). Without such a write its
// reads are another etcd's, and it is found foreign as before.
func TestASourceWhoseOwnWritesLandBelowItsReadsIsNotForeign(t *testing.T) {
	run := func(ownWrites bool) (foreign bool) {
		sp := NewSpace(64, sec(0), 5*time.Second)
		sp.AddSource(0) // configmaps, the canary's
		sp.AddSource(1) // widgets, a second canary's, listed after it
		sp.Anchor(0)
		for i := 1; i <= 10; i++ {
			sp.Sample(0, uint64(1000+4*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
			sp.Sample(1, uint64(1000+4*i), true, sec(float64(5*i)), sec(float64(5*i)), true)
			sp.Write(uint64(1001+4*i), sec(float64(5*i)+1), false)
		}
		// etcd restored to 2: configmaps' cache restarts, widgets' stays
		// at 1040
		if !sp.Write(3, sec(57), false) {
			t.Fatal("the canary's write below the reads proved no loss")
		}
		rv := uint64(4)
		for i := 0; i < 30; i++ {
			at := 60 + 5*float64(i)
			v := sp.Sample(0, rv, true, sec(at), sec(at), true)
			foreign = foreign || slices.Contains(v.Foreign, 1)
			v = sp.Sample(1, 1040, true, sec(at+0.5), sec(at+0.5), true)
			foreign = foreign || slices.Contains(v.Foreign, 1)
			sp.Write(rv+1, sec(at+1), false)
			if ownWrites {
				sp.OwnWrite(1, rv+2, sec(at+2))
			}
			rv += 2
		}
		return foreign || !slices.Contains(sp.Sources(), 1)
	}
	if run(true) {
		t.Error("a source whose own canary's writes landed below its reads was found foreign: its reads are a frozen cache of the lost history")
	}
	if !run(false) {
		t.Error("a source reading above the reference, with no write of its own, was not found foreign")
	}
}

// The canary's resource anchors its space: its writes land in its own
// etcd, so the reads of the same resource are the space's head. Listed
// after a resource on an etcd of its own (events, revision 10,000,000),
// it used to read below that head, and so did every canary write: a
// regression counted at start with no restore (simulation corpus seed 46,
// issue #39's second premise). Once samples were taken, the reference
// stays.
func TestTheCanarysResourceAnchorsItsSpace(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0) // events, on an etcd of their own, listed first
	sp.AddSource(1) // configmaps, the canary's
	if !sp.Anchor(1) || sp.Reference() != 1 || sp.Order()[0] != 1 {
		t.Fatalf("reference %d, order %v after anchoring configmaps; want configmaps first", sp.Reference(), sp.Order())
	}
	sp.Sample(1, 1000, true, sec(1), sec(1), true)
	if v := sp.Sample(0, 10_000_000, true, sec(1), sec(1), true); v.Regressed {
		t.Error("the events etcd's head counted a regression")
	}
	if sp.Write(1001, sec(2), false) {
		t.Error("a canary write above its own resource's head proved a loss")
	}
	if sp.Anchor(0) {
		t.Error("the reference moved after samples were taken")
	}
}

// A second canary's resource does not move the anchor: it may be of
// another etcd (events on an etcd of their own, its `space:` omitted,
// with a canary of its own beside configmaps'), and its reads would set
// a head every write of the first canary lands below: regressions counted
// at start with no restore (simulation seeds 377340 and 377479 of
// -sim.widen=canaries with every other dimension). The samples settle
// which etcd it reads.
func TestASecondCanarysResourceDoesNotMoveTheAnchor(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0) // configmaps, the first canary's
	sp.AddSource(1) // events, on an etcd of their own, the second canary's
	if !sp.Anchor(0) {
		t.Fatal("the first canary's resource did not anchor the space")
	}
	if sp.Anchor(1) || sp.Reference() != 0 {
		t.Errorf("reference %d after a second canary's resource asked to anchor; want configmaps (0) to stay", sp.Reference())
	}
	sp.RemoveSource(0) // configmaps moved to a space of its own
	if !sp.Anchor(1) || sp.Reference() != 1 {
		t.Errorf("reference %d once the anchored resource left; want events (1), the canary's that remains", sp.Reference())
	}
}

// Resources of another etcd, higher than the reference's, read together
// (the freshness reads of several informers in one round) are foreign each:
// the reference, asked after they answered, saw less twice while moving
// on. They were not, when several sources answered above the reference
// (simulation seed 65 of -sim.widen=order: events on an etcd of their own
// listed first, no canary; configmaps and secrets on the main etcd stayed
// in the events' space, configmaps ahead_of_head and 135 s stale while
// nothing was missing).
func TestSeveralSourcesOfAHigherEtcdAreForeign(t *testing.T) {
	sp := spaceOfSources(3)
	foreign := map[int32]bool{}
	head, main := uint64(10), uint64(1000)
	for round := range 4 {
		at := sec(float64(60 * (round + 1)))
		sp.Sample(0, head, true, at, at, true)
		main += 250
		for id := int32(1); id < 3; id++ {
			for _, f := range sp.Sample(id, main, true, at.Add(time.Second), at.Add(time.Second), false).Foreign {
				foreign[f] = true
			}
		}
		head += 3
		for _, f := range sp.Sample(0, head, true, at.Add(2*time.Second), at.Add(2*time.Second), true).Foreign {
			foreign[f] = true
		}
	}
	if !foreign[1] || !foreign[2] || foreign[0] {
		t.Errorf("foreign %v after 4 rounds of the reference moving on below both; want sources 1 and 2", foreign)
	}
	if got := sp.Order(); len(got) != 1 || got[0] != 0 {
		t.Errorf("sources %v; want the reference alone", got)
	}
}

// A resource of another, lower etcd whose freshness reads go out in the
// same round as other informers' is foreign too: its read is sent before
// another's higher answer comes, so it was taken for an older snapshot of
// the space and dropped, every round. Below a head the reference had
// answered before it was sent, it is no older snapshot (simulation seed
// 30 of -sim.widen=order: configmaps listed first, events on an etcd of
// their own stayed in the cluster's space, RV lag 1058 and 135 s stale
// while nothing was missing).
func TestALowerEtcdReadInARoundIsForeign(t *testing.T) {
	sp := spaceOfSources(3)
	foreign := map[int32]bool{}
	head, events := uint64(1000), uint64(30)
	for round := range 3 {
		at := sec(float64(60 * (round + 1)))
		sp.Sample(0, head, true, at.Add(-5*time.Second), at.Add(-5*time.Second), true)
		head += 6
		// the round: deployments (main etcd) answers first, events were
		// asked at the same instant
		sp.Sample(2, head, true, at, at.Add(time.Millisecond), false)
		events += 5
		for _, f := range sp.Sample(1, events, true, at, at.Add(2*time.Millisecond), false).Foreign {
			foreign[f] = true
		}
		head += 4
		for _, f := range sp.Sample(0, head, true, at.Add(400*time.Millisecond), at.Add(400*time.Millisecond), true).Foreign {
			foreign[f] = true
		}
	}
	if !foreign[1] || foreign[2] || foreign[0] {
		t.Errorf("foreign %v after 3 rounds; want the events' source 1 alone", foreign)
	}
}

// A resource of another etcd beside an idle reference is foreign once its
// own samples move on, above it or below it: only the reference moving on
// counted a second contradiction, and below it the reference at the same
// head counted none (simulation seed 99 of -sim.widen=order: events listed
// first with no writes, configmaps 135 s stale while nothing was missing;
// seed 30 shrunk: only the events had writes). Frozen caches move neither
// and stay in the space.
func TestAnotherEtcdBesideAnIdleReferenceIsForeign(t *testing.T) {
	for _, c := range []struct {
		name        string
		first, step uint64
		foreign     bool
	}{
		{"above, moving on", 1000, 250, true},
		{"above, frozen", 1000, 0, false},
		{"below, moving on", 30, 5, true},
		{"below, frozen", 30, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := NewSpace(64, sec(0), 5*time.Second)
			sp.AddSource(0)
			sp.AddSource(1)
			named := false
			other, head := c.first, uint64(100)
			for round := range 4 {
				at := sec(float64(60 * (round + 1)))
				sp.Sample(0, head, true, at, at, true)
				other += c.step
				named = named || len(sp.Sample(1, other, true, at.Add(time.Second), at.Add(time.Second), false).Foreign) > 0
				named = named || len(sp.Sample(0, head, true, at.Add(2*time.Second), at.Add(2*time.Second), true).Foreign) > 0
			}
			if named != c.foreign {
				t.Errorf("named foreign %v after 4 rounds beside an idle reference at %d; want %v", named, head, c.foreign)
			}
		})
	}
}

// spaceOfSources is a space whose head sources are 0 (its reference) to
// n-1, probed every 5 s.
func spaceOfSources(n int32) *Space {
	sp := NewSpace(64, sec(0), 5*time.Second)
	for id := range n {
		sp.AddSource(id)
	}
	return sp
}

// twoSources returns a space of two sources, 0 its reference.
func twoSources() *Space {
	sp := NewSpace(64, sec(0), 5*time.Second)
	sp.AddSource(0)
	sp.AddSource(1)
	return sp
}

// probeRising has the reference's probe answer base+step·i at 5·i s, for
// i from 1 to 10.
func probeRising(sp *Space, base, step uint64) {
	for i := uint64(1); i <= 10; i++ {
		at := sec(float64(5 * i))
		sp.Sample(0, base+step*i, true, at, at, true)
	}
}

// TestASourceIsUnsettledUntilTheReferenceSettlesIt: every source but the
// reference is unsettled until the reference's probe confirms it twice
// while the head moves on (a read of its etcd) or contradicts it into
// another space (a read of a lower or a higher etcd). A confirmed source
// stays settled: after a restore, watch caches frozen in the lost history
// contradict each other.
func TestASourceIsUnsettledUntilTheReferenceSettlesIt(t *testing.T) {
	sp := NewSpace(64, sec(0), 5*time.Second)
	for id := range int32(4) {
		sp.AddSource(id) // 0, the reference; 1 of its etcd; 2 of a lower, 3 of a higher one
	}
	if got := sp.Unconfirmed(10); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("before any sample: unsettled %v, want [1 2 3]", got)
	}
	if got := sp.Unconfirmed(2); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("at most 2: unsettled %v, want [1 2]", got)
	}
	// the higher etcd's provisional head hides the lower one's samples
	// from the reference's next probe (its head is above theirs): the
	// lower one is judged a round later
	var foreign []int32
	for round := range uint64(3) {
		at := float64(10 * round)
		foreign = append(foreign, sp.Sample(0, 1000+20*round, true, sec(at), sec(at), true).Foreign...)
		for id, rv := range []uint64{1: 1000 + 20*round + 5, 2: 10 + round, 3: 50000 + round} {
			if id > 0 && !slices.Contains(foreign, int32(id)) {
				sp.Sample(int32(id), rv, true, sec(at+1), sec(at+1), false)
			}
		}
		foreign = append(foreign, sp.Sample(0, 1000+20*round+10, true, sec(at+5), sec(at+5), true).Foreign...)
		if round == 0 {
			if got := sp.Unconfirmed(10); !slices.Equal(got, []int32{1, 2, 3}) {
				t.Errorf("after one round: unsettled %v, want [1 2 3] (one confirmation, one contradiction each)", got)
			}
		}
	}
	slices.Sort(foreign)
	if !slices.Equal(foreign, []int32{2, 3}) {
		t.Errorf("foreign %v, want [2 3]: the lower and the higher etcd's sources", foreign)
	}
	if got := sp.Unconfirmed(10); len(got) != 0 {
		t.Errorf("after three rounds: unsettled %v, want none", got)
	}
	// a restore the probe has not seen: source 1's cache, frozen in the
	// lost history one revision below the reference's, contradicts it
	sp.Sample(1, 1059, true, sec(31), sec(31), false)
	sp.Sample(0, 1060, true, sec(35), sec(35), true)
	if got := sp.Unconfirmed(10); len(got) != 0 {
		t.Errorf("a confirmed source contradicted once: unsettled %v, want none", got)
	}
}

// TestAFailingSourceIsCheckedAtItsBackoff: a source whose reads keep
// failing is left out of Unsettled while it backs off, as the head probe's
// fallback order leaves it out, and comes back when its backoff ran out.
func TestAFailingSourceIsCheckedAtItsBackoff(t *testing.T) {
	sp := twoSources()
	sp.Failed(1)
	sp.Failed(1) // the second failure in a row skips a round
	if got := sp.Unconfirmed(10); len(got) != 0 {
		t.Errorf("backing off: unsettled %v, want none", got)
	}
	sp.Order() // a probe round passes
	if got := sp.Unconfirmed(10); !slices.Equal(got, []int32{1}) {
		t.Errorf("after its backoff: unsettled %v, want [1]", got)
	}
}

// TestAHeadOfAnotherEtcdDroppedIsNoLongerTheHead: a source of another,
// higher etcd answers before the reference ever did (the head probe's check
// reads go out beside the first probe); when the reference's answer below
// it drops it, the space's head for lag is the reference's, not the higher
// one kept (simulation seed 332625: a lag of 9,997,501 on a complete store).
func TestAHeadOfAnotherEtcdDroppedIsNoLongerTheHead(t *testing.T) {
	sp := twoSources()
	sp.Sample(1, 10_000_000, true, sec(0), sec(0.1), false)
	sp.Sample(0, 1100, true, sec(5), sec(5), true)
	if head, _, ok := sp.Head(); !ok || head != 1100 {
		t.Errorf("head %d (known %v), want the reference's 1100", head, ok)
	}
}

// #39 (simulation seed 391091 of every widened dimension): one etcd
// restored 5,000 revisions back under two running API servers, the
// clients on HTTP/1.1. A canary's write below the reads proved the loss
// and counted it; then the reference's probe kept answering one server's
// frozen cache (8990) while another resource's freshness reads reached
// either server's (8907, 8949, 8977): below the reference, and seeming
// to move on, they were contradicted into a space of their own, where the
// next canary write, below the frozen caches, counted the same restore a
// second time. While a write shows the reads to be of a lost history,
// their samples contradicting each other prove no other etcd.
func TestCachesOfALostHistoryProveNoOtherEtcd(t *testing.T) {
	sp := twoSources()
	for i := 1; i <= 10; i++ {
		at := sec(float64(5 * i))
		sp.Sample(0, uint64(8500+40*i), true, at, at, true)
		sp.Sample(1, uint64(8490+40*i), true, at.Add(time.Second), at.Add(time.Second), false)
	}
	// etcd restored to 4000; the caches stay where they were
	if !sp.Write(4102, sec(56), false) {
		t.Fatal("the write below the reads did not prove the loss (the test's premise)")
	}
	var foreign []int32
	for i, rv := range []uint64{8907, 8949, 8977, 8907, 8977, 8949, 8977, 8977} {
		at := sec(float64(60 + 5*i))
		foreign = append(foreign, sp.Sample(0, 8990, true, at, at, true).Foreign...)
		foreign = append(foreign, sp.Sample(1, rv, true, at.Add(time.Second), at.Add(time.Second), false).Foreign...)
		foreign = append(foreign, sp.Sample(0, 8990, true, at.Add(2*time.Second), at.Add(2*time.Second), true).Foreign...)
	}
	if len(foreign) > 0 {
		t.Errorf("sources %v found to read another etcd while the caches of a lost history answered them", foreign)
	}
}

// A source read below a quiet reference and contradicted once, that
// neither side moved on from since, does not take the reference's role
// when the reference fails: it may read another etcd, whose restore would
// be counted for every resource of the space (simulation seed 1310965:
// events on an etcd of its own at 10,000,000, configmaps on the main etcd
// at 1,000, nothing written; the main etcd restored through the
// reference's outage, and a regression was counted for events). An
// uncontradicted source takes over as before.
func TestADoubtedSourceIsNoReferenceAfterAFailover(t *testing.T) {
	sp := twoSources()
	sp.Sample(0, 10_000_000, true, sec(0), sec(0), true)
	for i := 1; i <= 6; i++ { // configmaps below; nothing moves
		sp.Sample(1, 1000, true, sec(float64(5*i)), sec(float64(5*i)), false)
		sp.Sample(0, 10_000_000, true, sec(float64(5*i)+1), sec(float64(5*i)+1), true)
	}
	if sp.contradicted[1].n == 0 {
		t.Fatal("setup: the lower source was never contradicted")
	}
	for i := 0; i < refFailover; i++ {
		sp.Failed(0)
	}
	if ref := sp.Reference(); ref != 0 {
		t.Fatalf("reference %d after the failures: the doubted source took over", ref)
	}
	for i := 0; i < 5; i++ { // the main etcd restored: its reads go back
		if v := sp.Sample(1, 900, true, sec(float64(60+5*i)), sec(float64(60+5*i)), true); v.Regressed {
			t.Fatalf("verdict %+v at sample %d: the doubted source's etcd going back counted as the space's", v, i)
		}
	}

	clean := twoSources()
	probeRising(clean, 1010, 1)
	for i := 0; i < refFailover; i++ {
		clean.Failed(0)
	}
	if ref := clean.Reference(); ref != 1 {
		t.Errorf("reference %d after the failures; the uncontradicted source 1 should take over", ref)
	}
}

// losses counts the losses a space proved: each write that proved one,
// and each sample that counted a regression not known before.
type losses int

func (n *losses) write(lost bool) {
	if lost {
		*n++
	}
}

func (n *losses) sample(v Verdict) {
	if v.Regressed && !v.Known {
		*n++
	}
}
