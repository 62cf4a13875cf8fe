package probe

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// expect checks a snapshot's lag (-1: unknown) and staleness (-1: unknown).
func (w *world) expect(s float64, lag int, staleness float64) {
	w.t.Helper()
	sn := w.snap(s)
	if sn.LagKnown != (lag >= 0) || (lag >= 0 && sn.Lag != uint64(lag)) {
		w.t.Errorf("t=%vs: lag %d (known %v); want %d", s, sn.Lag, sn.LagKnown, lag)
	}
	if sn.StalenessKnown != (staleness >= 0) || (staleness >= 0 && sn.StalenessSeconds != staleness) {
		w.t.Errorf("t=%vs: staleness %v (known %v); want %v", s, sn.StalenessSeconds, sn.StalenessKnown, staleness)
	}
}

// The signals against a known timeline, step by step.
func TestSignalsAgainstKnownTimeline(t *testing.T) {
	w := newWorld(t, 100)
	w.probe(0)
	w.sync(0.5)         // a consistent list sent at 0.5s returns RV 100
	w.expect(1, 0, 0.5) // fresh as of the list's request
	var rvs []uint64
	for range 50 {
		rvs = append(rvs, w.write()) // 101…150, before the probe at 5s
	}
	w.probe(5)
	w.expect(5, 0, 4.5) // nothing delivered yet: lag is measured on deliveries
	for _, rv := range rvs {
		w.deliver(7, watch.Modified, rv) // delivered 2s after the probe that saw them answered
	}
	w.expect(7, 49, 2) // the first of them was 49 revisions behind the head when delivered
	if n, sum := histogram(t, w.tr.deliveryLag.(prometheus.Histogram)); n != 50 || sum != 100 {
		t.Errorf("delivery lag: %d observations summing to %vs; want 50 of 2s", n, sum)
	}
	w.probe(10)
	w.probe(15)
	w.expect(15, 0, 0) // no event since the previous probe: lag 0; fresh as of the probe at 15s
	// stall: the head moves on, nothing arrives
	stall := func(from, to float64) {
		for s := from; s <= to; s += 5 {
			w.others(10)
			w.probe(s)
		}
	}
	stall(20, 75)
	w.expect(76, 0, 61)   // silent for 69s: within a bookmark period and its slack (10s)
	w.expect(78, 120, 63) // silent longer: everything since its RV may be missing (head 270 at 75s)
	stall(80, 130)
	w.expect(128, 230, 113)
	// etcd restored: the head goes backwards
	w.rv = 90
	w.probe(135)
	if got := testutil.ToFloat64(w.tr.regressions); got != 1 {
		t.Errorf("regressions %v after the head went 370 -> 90; want 1", got)
	}
	// the informer's RV (150) is from the lost history: no lag, and
	// staleness keeps growing from 15s (last proven fresh) until it lists
	w.expect(136, -1, 121)
	w.sync(137)
	w.probe(140)
	w.expect(140, 0, 0)
	if got := testutil.ToFloat64(w.tr.regressions); got != 1 {
		t.Errorf("the relist after the restore counted again: %v regressions", got)
	}
}

func TestRelistReasons(t *testing.T) {
	r := newLWRig(t)
	relists := func() [3]float64 {
		return [3]float64{
			testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", catalog.RelistInitial)),
			testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", catalog.RelistExpired)),
			testutil.ToFloat64(r.mon.metrics.Relists.WithLabelValues("configmaps", catalog.RelistError)),
		}
	}
	r.is.listStarted(sec(0), false)
	r.is.listFailed(errRefused)
	r.is.listStarted(sec(2), false) // a retry of the initial list
	if got := relists(); got != [3]float64{1, 0, 0} {
		t.Errorf("initial list and its retry: %v", got)
	}
	r.is.listEnded("10", sec(3))
	r.is.watchFailed(errGone) // 410 inside a running watch
	r.is.listStarted(sec(4), true)
	r.is.listEnded("11", sec(5))
	r.is.watchFailed(errRefused)
	r.is.listStarted(sec(6), true)
	if got := relists(); got != [3]float64{1, 1, 1} {
		t.Errorf("after an expired and an error relist: %v", got)
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
