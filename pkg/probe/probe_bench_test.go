package probe

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

// Benchmarks of the per-event hot path. Run with
//
//	go test -run '^$' -bench . -benchmem ./pkg/probe
//
// They report; they assert nothing about speed.

const benchHeads = 4096 // a full default timeline

// benchInformer returns the state of an informer of a monitor whose
// timeline holds benchHeads heads, 10 revisions apart, one probe every 5s,
// and the time of the last: events observed then come, as on a live
// cluster, after every sample (observed before the samples, each event
// would ask the timeline about every later one).
func benchInformer(b *testing.B) (*informer, time.Time) {
	b.Helper()
	clk := testingclock.NewFakeClock(time.Now())
	m := New(Options{Clock: clk})
	tr := m.track(testGVR("configmaps"), "")
	is := tr.newInformer()
	at := m.start
	for i := range benchHeads {
		at = m.start.Add(time.Duration(i) * 5 * time.Second)
		tr.space.Load().core.Timeline.Add(at, at, uint64(1000+10*i))
	}
	clk.SetTime(at)
	return is, at
}

// benchObjects returns n ConfigMap metadata objects with increasing RVs
// inside the timeline's range.
func benchObjects(n int) []*metav1.PartialObjectMetadata {
	objs := make([]*metav1.PartialObjectMetadata, n)
	for i := range objs {
		objs[i] = &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "bench-" + strconv.Itoa(i%10), Name: "cm-" + strconv.Itoa(i),
				ResourceVersion: strconv.Itoa(1000 + i*10*benchHeads/n),
			},
		}
	}
	return objs
}

// BenchmarkWatchEvent sends watch events through the instrumented watch
// (a goroutine hop, RV parsing, the tracker's update and the delivery-lag
// observation) to its consumer, as the reflector reads them.
func BenchmarkWatchEvent(b *testing.B) {
	is, _ := benchInformer(b)
	objs := benchObjects(1 << 14)
	fw := watch.NewFake()
	iw := &instrumentedWatch{inner: fw, out: make(chan watch.Event), done: make(chan struct{}), state: is}
	go iw.run()
	defer iw.Stop()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fw.Modify(objs[i%len(objs)])
		<-iw.out
	}
}

// BenchmarkObserveEvent is the informer's share of one event, without the
// channel hop: its receipt and (no store to watch) its proofs.
func BenchmarkObserveEvent(b *testing.B) { benchObserveEvent(b, false) }

// BenchmarkObserveEventRecordingDeliveries is BenchmarkObserveEvent with
// the stale-read check on: each event's delivery time is also recorded.
func BenchmarkObserveEventRecordingDeliveries(b *testing.B) { benchObserveEvent(b, true) }

func benchObserveEvent(b *testing.B, recordDeliveries bool) {
	is, now := benchInformer(b)
	is.res.recordDeliveries.Store(recordDeliveries)
	objs := benchObjects(1 << 14)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		is.received(objs[i%len(objs)], now, watch.Modified)
	}
}

// benchQueries spreads RVs over the timeline's whole range.
func benchQueries() []uint64 {
	q := make([]uint64, 1024)
	for i := range q {
		q[i] = uint64(1000 + (i*7919)%(10*benchHeads))
	}
	return q
}

// BenchmarkTimelineLookup answers the two per-event questions on a full
// timeline.
func BenchmarkTimelineLookup(b *testing.B) {
	is, _ := benchInformer(b)
	tl, q := is.res.space.Load().core.Timeline, benchQueries()
	later := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) // every RV seen after every sample
	for _, lookup := range []struct {
		name string
		f    func(uint64) (time.Time, bool)
	}{{"FreshAtSeen", func(rv uint64) (time.Time, bool) { return tl.FreshAtSeen(rv, later) }}, {"CommitBound", func(rv uint64) (time.Time, bool) { b, _, ok := tl.CommitBound(rv); return b, ok }}} {
		b.Run(lookup.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				lookup.f(q[i%len(q)])
			}
		})
	}
}

// BenchmarkTimelineAdd is one head probe's update of a full timeline.
func BenchmarkTimelineAdd(b *testing.B) {
	is, last := benchInformer(b)
	tl := is.res.space.Load().core.Timeline
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		last = last.Add(5 * time.Second)
		tl.Add(last, last, uint64(1000+10*(benchHeads+i)))
	}
}

// BenchmarkSnapshots200 is the probe's share of a scrape of 200 resources.
func BenchmarkSnapshots200(b *testing.B) {
	m := New(Options{})
	for i := range 200 {
		m.track(testGVR("resource"+strconv.Itoa(i)+".example.com"), "")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.snapshots()
	}
}

// BenchmarkObserveEventQueued is BenchmarkObserveEvent for an informer whose
// store is observed: the event waits in the store queue on receipt and is
// counted when the store's handler notification for it arrives (the queue's
// push, its match and pop, and the wire-to-store lag observation), the cost
// the backpressure signals add per event.
func BenchmarkObserveEventQueued(b *testing.B) {
	is, now := benchInformer(b)
	is.setHook(func(h *informerHooks) { h.storeRV = func() string { return "" } })
	objs := benchObjects(1 << 14)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := objs[i%len(objs)]
		is.received(o, now, watch.Modified)
		is.notified(o)
	}
}
