package proof

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestTimelineFreshAtSeenAndCommitBound(t *testing.T) {
	tl := NewTimeline(16, t0)
	// probes every 5 s, each answered 1 s after its request: heads 100,
	// 100, 120, 150, 150, 200
	for i, rv := range []uint64{100, 100, 120, 150, 150, 200} {
		tl.Add(sec(float64(5*i)), sec(float64(5*i+1)), rv)
	}
	fresh := []struct {
		rv   uint64
		want time.Time
		ok   bool
	}{
		{99, time.Time{}, false}, // before all history
		{100, sec(5), true},      // the head was still 100 when the second probe was sent
		{119, sec(5), true},
		{120, sec(10), true},
		{160, sec(20), true},
		{200, sec(25), true},
		{1000, sec(25), true}, // ahead of every probe: fresh as of the latest request
	}
	for _, c := range fresh {
		got, ok := tl.FreshAtSeen(c.rv, sec(1000))
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("freshAt(%d) = %v, %v; want %v, %v", c.rv, got, ok, c.want, c.ok)
		}
	}
	// a cache that reached its RV at 12s: the samples requested after
	// that saw less contradict it and prove nothing
	if got, _ := tl.FreshAtSeen(160, sec(12)); !got.Equal(sec(10)) {
		t.Errorf("freshAtSeen(160, 12s) = %v; want 10s (the 150s were asked for after 160 was seen)", got)
	}
	if got, _ := tl.FreshAtSeen(150, sec(12)); !got.Equal(sec(20)) {
		t.Errorf("freshAtSeen(150, 12s) = %v; want 20s (a head equal to the RV proves it)", got)
	}
	bound := []struct {
		rv   uint64
		want time.Time
		ok   bool
	}{
		{50, sec(1), true}, // committed before the first probe answered
		{100, sec(1), true},
		{101, sec(11), true},
		{150, sec(16), true}, // the first probe that saw 150 answered at 16s
		{151, sec(26), true},
		{201, time.Time{}, false}, // not seen by any probe yet
	}
	for _, c := range bound {
		got, _, ok := tl.CommitBound(c.rv)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("commitBound(%d) = %v, %v; want %v, %v", c.rv, got, ok, c.want, c.ok)
		}
	}
	if rv, at, ok := tl.Latest(); !ok || rv != 200 || !at.Equal(sec(26)) {
		t.Errorf("latest() = %d, %v, %v", rv, at, ok)
	}
}

func TestTimelineResetAndLowerHeads(t *testing.T) {
	tl := NewTimeline(8, t0)
	tl.Add(sec(0), sec(0), 500)
	tl.Add(sec(5), sec(5), 600)
	tl.Add(sec(10), sec(10), 300) // a lower head is the space's to judge: ignored here
	if rv, _, _ := tl.Latest(); rv != 600 {
		t.Fatalf("latest %d after a lower head; want 600", rv)
	}
	tl.Reset()
	tl.Add(sec(10), sec(10), 300)
	if got, _ := tl.FreshAtSeen(550, sec(1000)); !got.Equal(sec(10)) {
		t.Errorf("freshAt(550) after reset = %v; old history leaked", got)
	}
	if _, _, ok := tl.CommitBound(400); ok {
		t.Error("commitBound(400) found a sample from before the reset")
	}
}

func TestTimelineProvisionalAbove(t *testing.T) {
	tl := NewTimeline(8, t0)
	tl.Add(sec(0), sec(0), 100)
	tl.AddProvisional(sec(5), sec(5), 200)
	tl.AddProvisional(sec(10), sec(10), 300)
	if provisional, ok := tl.ProvisionalAbove(150); !ok || !provisional {
		t.Errorf("ProvisionalAbove(150) = %v, ok %v; want only provisional heads above", provisional, ok)
	}
	if provisional, _ := tl.ProvisionalAbove(50); provisional {
		t.Error("ProvisionalAbove(50): the reference's 100 is above 50")
	}
	if _, ok := tl.ProvisionalAbove(300); ok {
		t.Error("ProvisionalAbove(300): no head above 300")
	}
	tl.Add(sec(15), sec(15), 300)
	if provisional, _ := tl.ProvisionalAbove(250); provisional {
		t.Error("ProvisionalAbove(250): the reference also saw 300")
	}
	tl.TruncateAbove(150)
	if rv, _, _ := tl.Latest(); rv != 100 {
		t.Errorf("latest %d after truncateAbove(150)", rv)
	}
}

func TestTimelineBoundedDropsOldest(t *testing.T) {
	tl := NewTimeline(4, t0)
	for i := range 10 {
		tl.Add(sec(float64(i)), sec(float64(i)), uint64(100+i))
	}
	if got := tl.Dropped(); got != 6 {
		t.Errorf("droppedCount() = %d; want 6", got)
	}
	if _, ok := tl.FreshAtSeen(105, sec(1000)); ok {
		t.Error("freshAt(105) found a dropped sample")
	}
	if got, _, ok := tl.CommitBound(100); !ok || !got.Equal(sec(6)) {
		t.Errorf("commitBound(100) = %v, %v; want the oldest kept sample at 6s", got, ok)
	}
	// equal heads share one slot: a long quiet period drops nothing
	q := NewTimeline(2, t0)
	for i := range 1000 {
		q.Add(sec(float64(i)), sec(float64(i)), 7)
	}
	if q.Dropped() != 0 {
		t.Errorf("quiet timeline dropped %d", q.Dropped())
	}
}

func TestTimelineHeadBy(t *testing.T) {
	tl := NewTimeline(16, t0)
	// heads 100 (answered at 1s and 6s), 120 (11s), and a provisional 130
	// of another source (16s)
	tl.Add(sec(0), sec(1), 100)
	tl.Add(sec(5), sec(6), 100)
	tl.Add(sec(10), sec(11), 120)
	tl.AddProvisional(sec(15), sec(16), 130)
	for _, c := range []struct {
		by       float64
		rv       uint64
		recv     float64
		ok       bool
		describe string
	}{
		{0.5, 0, 0, false, "before any answer"},
		{1, 100, 1, true, "the first answer"},
		{10.9, 100, 1, true, "120 not answered yet: 100, first answered at 1s"},
		{11, 120, 11, true, "120 answered"},
		{20, 120, 11, true, "a provisional head is not the reference's"},
	} {
		rv, recv, ok := tl.HeadBy(sec(c.by))
		if rv != c.rv || ok != c.ok || (ok && !recv.Equal(sec(c.recv))) {
			t.Errorf("HeadBy(%vs) = %d, %v, %v; want %d, %vs, %v (%s)", c.by, rv, recv.Sub(t0), ok, c.rv, c.recv, c.ok, c.describe)
		}
	}
}
