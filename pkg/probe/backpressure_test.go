//go:build integration

package probe_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// appliedLog records when the informer's store applied each RV: the test's
// own ground truth, taken in the (slow) indexer that applies it.
type appliedLog struct {
	mu  sync.Mutex
	rvs map[uint64]time.Time
}

func (a *appliedLog) add(rv uint64) {
	a.mu.Lock()
	a.rvs[rv] = time.Now()
	a.mu.Unlock()
}

func (a *appliedLog) count(rvs []uint64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, rv := range rvs {
		if _, ok := a.rvs[rv]; ok {
			n++
		}
	}
	return n
}

// write is one ConfigMap created by the test, with its RV and when the
// create returned (after its commit).
type write struct {
	rv   uint64
	done time.Time
}

// An informer whose indexer takes 10 ms per object, fed about a thousand
// creates per second by a real API server: its queue depth, the wait of its
// oldest queued event and its staleness are what the test computes from
// its own records of the writes and of the store's progress; with the slow
// part removed, the queue drains to 0.
func TestBackpressureOfASlowIndexer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "backpressure"
	if err := testenv.EnsureNamespace(ctx, env.Client, ns); err != nil {
		t.Fatal(err)
	}
	mon := probe.New(probe.Options{HeadProbe: env.Config, ProbeInterval: time.Second})
	reg := prometheus.NewRegistry()
	if err := mon.Register(reg); err != nil {
		t.Fatal(err)
	}
	var delay atomic.Int64
	delay.Store(int64(10 * time.Millisecond))
	applied := &appliedLog{rvs: map[uint64]time.Time{}}
	slowIndex := func(obj any) ([]string, error) {
		if d := time.Duration(delay.Load()); d > 0 {
			time.Sleep(d) // the deliberately slow part under test
		}
		if o, ok := obj.(metav1.Object); ok {
			if rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64); err == nil {
				applied.add(rv)
			}
		}
		return nil, nil
	}
	client := kubernetes.NewForConfigOrDie(env.Config)
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	inf := mon.Instrument(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{"slow": slowIndex})
	})
	// what the informer's consumers see: client-go applies a batch of
	// queued deltas (up to 1,000) in one store transaction and notifies the
	// handlers after it, so an object the indexer has taken is visible to
	// listers and handlers only once its whole batch is in
	var visible atomic.Int64
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { visible.Add(1) }})
	go inf.RunWithContext(ctx)
	go func() { _ = mon.Start(ctx) }()
	// beside it, the exporter's own kind of informer (keys only, no
	// indexer) on the same stream: its queue stays at ~0
	own := probe.New(probe.Options{HeadProbe: env.Config, ProbeInterval: time.Second})
	ownReg := prometheus.NewRegistry()
	if err := own.Register(ownReg); err != nil {
		t.Fatal(err)
	}
	ownInf, err := own.NewInformer(env.Config, probe.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	go ownInf.RunWithContext(ctx)
	go func() { _ = own.Start(ctx) }()
	cm := map[string]string{catalog.LabelResource: "configmaps"}
	testenv.WaitFor(t, time.Minute, "synced and probed", func() (bool, error) {
		m, err := testenv.Gather(reg)
		if err != nil {
			return false, err
		}
		_, staleness := m.Value(catalog.CacheStaleness.Name, cm)
		return inf.HasSynced() && ownInf.HasSynced() && staleness, nil
	})

	// 2 s of creates from 4 writers, as fast as the API server takes them
	// (about a thousand per second here): the store applies 100 per second
	var mu sync.Mutex
	var writes []write
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				c, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%d", w, i)}}, metav1.CreateOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				rv, _ := strconv.ParseUint(c.ResourceVersion, 10, 64)
				mu.Lock()
				writes = append(writes, write{rv: rv, done: time.Now()})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(writes, func(a, b write) int { return int(a.rv) - int(b.rv) })
	rvs := make([]uint64, len(writes))
	for i, w := range writes {
		rvs[i] = w.rv
	}
	t.Logf("%d creates in 2s (%.0f/s); the store applies ~100/s", len(writes), float64(len(writes))/2)
	if len(writes) < 300 {
		t.Skipf("only %d creates in 2s: too few to build a backlog behind a 10 ms indexer on this machine", len(writes))
	}

	// one scrape, once every event reached the wire (loopback:
	// milliseconds), compared with the truth just before and just after it:
	// events the indexer has not taken are certainly waiting; events no
	// consumer has seen yet are waiting for their batch
	var (
		m                  testenv.Metrics
		depth              float64
		taken, seen, after int
		at                 time.Time
	)
	testenv.WaitFor(t, 30*time.Second, "every event on the wire", func() (bool, error) {
		var err error
		taken, seen, at = applied.count(rvs), int(visible.Load()), time.Now()
		if m, err = testenv.Gather(reg); err != nil {
			return false, err
		}
		after = applied.count(rvs)
		depth, _ = m.Value(catalog.StoreQueueDepth.Name, cm)
		// and not in the middle of a batch's notifications
		quiet := int(visible.Load()) == seen
		return quiet && (depth >= float64(len(writes)-after) || after == len(writes)), nil
	})
	if int(visible.Load()) == len(writes) {
		t.Fatalf("the store applied all %d events before the scrape: no backlog to measure", len(writes))
	}
	// the queue counts an event out when the monitor's handler hears of it,
	// a listener of its own beside the test's, which a loaded machine may
	// run later (a full run saw it behind by 126 events): so the depth lies
	// between what the indexer has not taken and what came on the wire, plus
	// a bookmark among the events and the batch slack of storeQueue
	if lo, hi := float64(len(writes)-after), float64(len(writes)); depth < lo || depth > hi+5 {
		t.Errorf("queue depth %v; the test counts %v events the indexer has not taken (%d no consumer of its own has seen) of %v on the wire", depth, lo, len(writes)-seen, hi)
	}
	// the oldest waiting event is one of the depth the queue counts, queued
	// when it reached the wire: no sooner than its create returned (the
	// first of them by then, at the latest), and later when the monitor's
	// handler, a listener of its own, ran behind the test's (a loaded CI
	// machine: 1.87 s against 0.91 s for the first event the test's
	// listener had not seen). The reflector never waits for the slow store:
	// when a delta drained the store on its goroutine, it waited for the
	// indexer's lock, the stream backed up into the connection and the
	// oldest read 0.3-1.2 s against creates 7-27 s old (CI, 4 Dec 2026);
	// now 2.00 s against 2.00 s
	first := min(max(len(writes)-int(depth), 0), len(writes)-1)
	wantOldest := at.Sub(writes[first].done).Seconds()
	oldest, _ := m.Value(catalog.StoreQueueOldest.Name, cm)
	if oldest <= 0 || oldest > wantOldest+0.5 {
		t.Errorf("oldest queued event waited %vs; the first of the %v queued was created %.2fs before", oldest, depth, wantOldest)
	}
	// the store does not hold the first event the indexer had not taken: the
	// cache cannot have been proven fresh after it committed (before its
	// create returned)
	notInStore := at.Sub(writes[taken].done).Seconds()
	staleness, _ := m.Value(catalog.CacheStaleness.Name, cm)
	if staleness < notInStore-0.05 {
		t.Errorf("staleness %vs while the store lacks an event committed %.2fs ago: the wire's freshness, not the store's", staleness, notInStore)
	}
	if ownM, err := testenv.Gather(ownReg); err != nil {
		t.Fatal(err)
	} else {
		ownDepth, _ := ownM.Value(catalog.StoreQueueDepth.Name, cm)
		ownLag, _ := ownM.Histogram(catalog.StoreLag.Name, cm)
		p99 := testenv.Quantile(ownLag, 0.99)
		t.Logf("the exporter's key informer on the same stream: queue depth %v, wire-to-store lag p99 %.4fs over %d deltas", ownDepth, p99, ownLag.GetSampleCount())
		if ownDepth > 10 || p99 > 0.5 {
			t.Errorf("the exporter's key informer: queue depth %v, wire-to-store lag p99 %vs under %d creates in 2s; want ~0", ownDepth, p99, len(writes))
		}
	}
	t.Logf("at the scrape: queue depth %v (not taken by the indexer %d, not seen by a consumer %d), oldest %vs (truth %.2fs), staleness %vs (at least %.2fs)", depth, len(writes)-after, len(writes)-seen, oldest, wantOldest, staleness, notInStore)

	// the slow part removed: the queue drains, the store holds every write
	delay.Store(0)
	last := float64(writes[len(writes)-1].rv)
	testenv.WaitFor(t, time.Minute, "queue drained", func() (bool, error) {
		m, err := testenv.Gather(reg)
		if err != nil {
			return false, err
		}
		depth, _ := m.Value(catalog.StoreQueueDepth.Name, cm)
		oldest, _ := m.Value(catalog.StoreQueueOldest.Name, cm)
		rv, _ := m.Value(catalog.InformerResourceVersion.Name, cm)
		return depth == 0 && oldest == 0 && rv >= last && int(visible.Load()) == len(writes), nil
	})
	m, err = testenv.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	lag, ok := m.Histogram(catalog.StoreLag.Name, cm)
	if !ok {
		t.Fatal("no wire-to-store lag histogram")
	}
	// the last events waited for the whole backlog: seconds
	if below, _ := testenv.CountBelow(lag, 1); below == lag.GetSampleCount() {
		t.Errorf("no wire-to-store lag above 1s in %d observations", lag.GetSampleCount())
	}
}
