package probe

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestTimelineFreshAtAndCommitBound(t *testing.T) {
	tl := newTimeline(16, t0)
	// probes every 5 s: heads 100, 100, 120, 150, 150, 200
	for i, rv := range []uint64{100, 100, 120, 150, 150, 200} {
		if tl.Add(sec(float64(5*i)), rv) {
			t.Fatalf("unexpected regression at %d", rv)
		}
	}
	fresh := []struct {
		rv   uint64
		want time.Time
		ok   bool
	}{
		{99, time.Time{}, false}, // before all history
		{100, sec(5), true},      // the head was 100 until the second probe
		{119, sec(5), true},
		{120, sec(10), true},
		{160, sec(20), true},
		{200, sec(25), true},
		{1000, sec(25), true}, // ahead of every probe: fresh as of the latest
	}
	for _, c := range fresh {
		got, ok := tl.FreshAt(c.rv)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("FreshAt(%d) = %v, %v; want %v, %v", c.rv, got, ok, c.want, c.ok)
		}
	}
	bound := []struct {
		rv   uint64
		want time.Time
		ok   bool
	}{
		{50, sec(0), true}, // committed before the first probe: bounded by it
		{100, sec(0), true},
		{101, sec(10), true},
		{150, sec(15), true}, // first probe that saw 150
		{151, sec(25), true},
		{201, time.Time{}, false}, // not seen by any probe yet
	}
	for _, c := range bound {
		got, ok := tl.CommitBound(c.rv)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("CommitBound(%d) = %v, %v; want %v, %v", c.rv, got, ok, c.want, c.ok)
		}
	}
	if rv, at, ok := tl.Latest(); !ok || rv != 200 || !at.Equal(sec(25)) {
		t.Errorf("Latest() = %d, %v, %v", rv, at, ok)
	}
}

func TestTimelineRegressionResets(t *testing.T) {
	tl := newTimeline(8, t0)
	tl.Add(sec(0), 500)
	tl.Add(sec(5), 600)
	if !tl.Add(sec(10), 300) {
		t.Fatal("head 600 -> 300 not reported as a regression")
	}
	if _, ok := tl.FreshAt(550); !ok {
		t.Fatal("FreshAt after reset should see the new sample")
	}
	if got, _ := tl.FreshAt(550); !got.Equal(sec(10)) {
		t.Errorf("FreshAt(550) after reset = %v; old history leaked", got)
	}
	if _, ok := tl.CommitBound(400); ok {
		t.Error("CommitBound(400) found a sample from before the regression")
	}
}

func TestTimelineBoundedDropsOldest(t *testing.T) {
	tl := newTimeline(4, t0)
	for i := range 10 {
		tl.Add(sec(float64(i)), uint64(100+i))
	}
	if got := tl.Dropped(); got != 6 {
		t.Errorf("Dropped() = %d; want 6", got)
	}
	if _, ok := tl.FreshAt(105); ok {
		t.Error("FreshAt(105) found a dropped sample")
	}
	if got, ok := tl.CommitBound(100); !ok || !got.Equal(sec(6)) {
		t.Errorf("CommitBound(100) = %v, %v; want the oldest kept sample at 6s", got, ok)
	}
	// equal heads share one slot: a long quiet period drops nothing
	q := newTimeline(2, t0)
	for i := range 1000 {
		q.Add(sec(float64(i)), 7)
	}
	if q.Dropped() != 0 {
		t.Errorf("quiet timeline dropped %d", q.Dropped())
	}
}
