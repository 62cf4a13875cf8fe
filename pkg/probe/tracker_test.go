package probe

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// trackerRig drives one tracker and its space with a fake clock: probes and
// events at known times, against which lag, staleness and delivery lag have
// exact expected values.
type trackerRig struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	mon   *Monitor
	tr    *tracker
}

func newRig(t *testing.T) *trackerRig {
	clk := clocktesting.NewFakeClock(t0)
	mon := New(Options{Clock: clk})
	return &trackerRig{t: t, clock: clk, mon: mon, tr: mon.track(testGVR("configmaps"), "")}
}

func (r *trackerRig) at(s float64) { r.clock.SetTime(sec(s)) }

func (r *trackerRig) probe(s float64, head string) {
	r.at(s)
	r.tr.space.record("configmaps", head, sec(s))
}

func (r *trackerRig) event(s float64, rv string) {
	r.at(s)
	r.tr.observeEvent(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: rv}}, sec(s), true)
}

// expect checks lag (-1: not known) and staleness at s.
func (r *trackerRig) expect(s float64, lag int, staleness float64) {
	r.t.Helper()
	r.at(s)
	snap := r.tr.snapshot(r.clock.Now())
	if snap.LagKnown != (lag >= 0) || (lag >= 0 && snap.Lag != uint64(lag)) {
		r.t.Errorf("t=%vs: lag %d (known %v); want %d", s, snap.Lag, snap.LagKnown, lag)
	}
	if !snap.StalenessKnown || snap.StalenessSeconds != staleness {
		r.t.Errorf("t=%vs: staleness %v (known %v); want %v", s, snap.StalenessSeconds, snap.StalenessKnown, staleness)
	}
}

func (r *trackerRig) deliveries() (uint64, float64) {
	r.t.Helper()
	var m dto.Metric
	if err := r.tr.deliveryLag.(prometheus.Metric).Write(&m); err != nil {
		r.t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestTrackerSignalsAgainstKnownTimeline(t *testing.T) {
	r := newRig(t)
	r.tr.synced = func() bool { return true }
	r.probe(0, "100")
	// a consistent list (RV "") started at t=0 returns RV 100
	r.tr.startList(sec(0), false)
	r.tr.endList(listKindList, "100", sec(0.5))
	r.expect(1, -1, 1) // no probe since the list: lag unknown; fresh as of the list's start
	r.probe(5, "150")  // 50 writes committed, not yet delivered
	r.expect(5, 50, 5)
	r.event(7, "150")  // delivered 2s after the first probe that saw it
	r.expect(7, 50, 2) // lag is as of the last probe; staleness is now
	if n, sum := r.deliveries(); n != 1 || sum != 2 {
		t.Errorf("delivery lag: %d observations summing to %vs; want 1 of 2s", n, sum)
	}
	r.probe(10, "150")
	r.expect(10, 0, 0)
	// stall: the head moves on, no event arrives
	r.probe(15, "200")
	r.probe(20, "260")
	r.expect(20, 110, 10) // fresh as of t=10, the last probe with head <= 150
	r.event(21, "260")
	r.expect(21, 110, 1)
	// etcd restored: the head goes backwards
	before := testutil.ToFloat64(r.tr.regressions)
	r.probe(25, "90")
	if got := testutil.ToFloat64(r.tr.regressions); got != before+1 {
		t.Errorf("regressions %v after the head went 260 -> 90; want %v", got, before+1)
	}
	// the informer's RV (260) is from the lost history: no lag, and
	// staleness keeps growing from t=20 (last proven fresh) until it lists
	r.expect(25, -1, 5)
	r.tr.startList(sec(26), false)
	r.tr.endList(listKindList, "95", sec(26))
	r.probe(30, "95")
	r.expect(30, 0, 0)
	if got := testutil.ToFloat64(r.tr.regressions); got != before+1 {
		t.Errorf("the relist after the restore counted again: %v regressions", got)
	}
}

func TestRelistReasons(t *testing.T) {
	r := newRig(t)
	synced := false
	r.tr.synced = func() bool { return synced }
	relists := func(reason string) float64 {
		return testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", reason))
	}
	gone := apierrors.NewResourceExpired("too old resource version")
	steps := []struct {
		name    string
		do      func()
		initial float64
		expired float64
		other   float64
	}{
		{"first list", func() { r.tr.startList(sec(0), true) }, 1, 0, 0},
		{"retry before the first sync is no relist", func() {
			r.tr.failList(listKindList, errors.New("refused"), sec(1))
			r.tr.startList(sec(2), true)
		}, 1, 0, 0},
		{"410 inside a running watch", func() {
			synced = true
			r.tr.endList(listKindList, "10", sec(3))
			r.tr.failWatch(gone)
			r.tr.startList(sec(4), false)
		}, 1, 1, 0},
		{"other watch failure", func() {
			r.tr.endList(listKindList, "11", sec(5))
			r.tr.failWatch(errors.New("connection reset"))
			r.tr.startList(sec(6), false)
		}, 1, 1, 1},
		{"list refused with 410 then retried", func() {
			r.tr.failList(listKindList, gone, sec(7))
			r.tr.startList(sec(8), false)
		}, 1, 2, 1},
	}
	for _, s := range steps {
		s.do()
		if got := [3]float64{relists(catalog.RelistInitial), relists(catalog.RelistExpired), relists(catalog.RelistError)}; got != [3]float64{s.initial, s.expired, s.other} {
			t.Errorf("%s: relists initial/expired/error = %v; want %v", s.name, got, [3]float64{s.initial, s.expired, s.other})
		}
	}
	if v := testutil.ToFloat64(r.mon.metrics.WatchErrors.WithLabelValues("configmaps", catalog.ReasonExpired)); v != 1 {
		t.Errorf("watch errors{expired} = %v; want 1", v)
	}
}

// testGVR returns the resource of a `plural.group` label value, for tests.
func testGVR(name string) schema.GroupVersionResource {
	plural, group, _ := strings.Cut(name, ".")
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
}
