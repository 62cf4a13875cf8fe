package probe

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// gatedStore is an informer of a scripted resource whose store cannot apply
// events while the test holds its gate: an indexer blocks on it, as a slow
// indexer (or a starved processing goroutine) would. The watch delivers
// regardless, so the wire runs ahead of the store.
type gatedStore struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	mon    *Monitor
	reg    *prometheus.Registry
	tr     *resource
	inf    cache.SharedIndexInformer
	events *watch.FakeWatcher
	head   atomic.Uint64
	gate   chan struct{} // closed: the store applies
	gated  atomic.Bool
	held   chan struct{} // closed when the indexer first waits at the gate
	once   sync.Once
}

func newGatedStore(t *testing.T) *gatedStore {
	g := &gatedStore{t: t, clock: clocktesting.NewFakeClock(t0), events: watch.NewFakeWithChanSize(1000, false), gate: make(chan struct{}), held: make(chan struct{})}
	g.head.Store(100)
	g.mon = New(Options{Clock: g.clock, ProbeInterval: probeEvery})
	g.reg = prometheus.NewRegistry()
	if err := g.mon.Register(g.reg); err != nil {
		t.Fatal(err)
	}
	gvr := testGVR("configmaps")
	g.tr = g.mon.track(gvr, "")
	g.tr.space.Load().addSource(g.tr.name, func(context.Context) (string, error) {
		return strconv.FormatUint(g.head.Load(), 10), nil
	})
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return page("100", ""), nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return g.events, nil
		},
	}, noWatchList{})
	slowIndex := func(obj any) ([]string, error) {
		if g.gated.Load() {
			g.once.Do(func() { close(g.held) })
			<-g.gate
		}
		return nil, nil
	}
	g.inf = g.mon.Instrument(gvr, lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{"slow": slowIndex})
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go g.inf.RunWithContext(ctx)
	testenv.WaitFor(t, 30*time.Second, "informer synced", func() (bool, error) { return g.inf.HasSynced(), nil })
	// the list's end applied: synced says the store holds the list, not
	// that the monitor has drained it (an empty queue before the list end
	// was pushed would say nothing)
	testenv.WaitFor(t, 30*time.Second, "the list's end applied at RV 100", func() (bool, error) {
		g.mon.drainStores()
		sn := g.snap()
		return sn.InformerRV == 100 && sn.QueueDepth == 0, nil
	})
	return g
}

func (g *gatedStore) probe() {
	var wg sync.WaitGroup
	g.mon.probe(context.Background(), g.tr.space.Load(), &wg)
	wg.Wait()
}

// modify delivers one Modified event per RV in (from, to] on the wire, each
// of its own object.
func (g *gatedStore) modify(from, to uint64) {
	for rv := from + 1; rv <= to; rv++ {
		g.events.Modify(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("o%d", rv), ResourceVersion: strconv.FormatUint(rv, 10)}})
	}
}

func (g *gatedStore) snap() snapshot {
	sn, _ := g.tr.snapshot(g.clock.Now())
	return sn
}

// waitQueue waits until the queue holds n deltas, draining what the store
// applied without a notification as the monitor's ticker does.
func (g *gatedStore) waitQueue(n int) {
	testenv.WaitFor(g.t, 30*time.Second, fmt.Sprintf("queue depth %d", n), func() (bool, error) {
		g.mon.drainStores()
		return g.snap().QueueDepth == n, nil
	})
}

// While the store of an informer lags behind its watch, the cache is as
// stale as the store: the events on the wire prove nothing until the store
// holds them. Queue depth counts them, the oldest's wait and the
// wire-to-store lag are the time the test held the store, and once the
// store catches up everything returns to 0 and fresh.
func TestFreshnessCountsOnlyWhatTheStoreHolds(t *testing.T) {
	g := newGatedStore(t)
	g.probe() // t0: head 100, the store holds 100: fresh
	if sn := g.snap(); !sn.StalenessKnown || sn.StalenessSeconds != 0 || sn.QueueDepth != 0 {
		t.Fatalf("synced at the head: staleness %v (known %v), queue %d; want 0, 0", sn.StalenessSeconds, sn.StalenessKnown, sn.QueueDepth)
	}

	g.gated.Store(true)
	g.clock.Step(time.Second)
	g.head.Store(120)
	g.modify(100, 120) // 20 events on the wire, the first stuck in the indexer
	g.waitQueue(20)
	g.clock.Step(4 * time.Second)
	g.probe() // t0+5s: head 120, covered by the wire but not by the store
	sn := g.snap()
	if sn.InformerRV != 100 {
		t.Errorf("informer RV %d while the store holds 100; want 100", sn.InformerRV)
	}
	if sn.StalenessSeconds != 5 {
		t.Errorf("staleness %vs while the store holds nothing since t0 (5s ago); want 5", sn.StalenessSeconds)
	}
	if sn.QueueDepth != 20 || sn.QueueOldestSeconds != 4 {
		t.Errorf("queue %d, oldest %vs; want 20 events waiting for 4s", sn.QueueDepth, sn.QueueOldestSeconds)
	}

	g.clock.Step(2 * time.Second)
	close(g.gate) // the store catches up at t0+7s
	g.waitQueue(0)
	g.probe()
	sn = g.snap()
	if sn.InformerRV != 120 || !sn.StalenessKnown || sn.StalenessSeconds != 0 || sn.QueueOldestSeconds != 0 {
		t.Errorf("store caught up: informer RV %d, staleness %vs, oldest %vs; want 120, 0, 0", sn.InformerRV, sn.StalenessSeconds, sn.QueueOldestSeconds)
	}
	m, err := testenv.Gather(g.reg)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := m.Histogram(catalog.StoreLag.Name, map[string]string{catalog.LabelResource: "configmaps"})
	// the initial list's end (in the store at once) and the 20 events (6s each)
	if !ok || h.GetSampleCount() != 21 || h.GetSampleSum() != 20*6 {
		t.Errorf("wire-to-store lag: %d observations summing to %vs; want 21 summing to 20×6s", h.GetSampleCount(), h.GetSampleSum())
	}
}

// More deltas than the queue has entries: depth stays exact, the overflow
// is observed as one batch, and draining it leaves nothing behind.
//
// The indexer holds the store's lock while it waits: the watch's side must
// never wait for that lock (it did, when a delta drained what the store
// applied on the reflector's goroutine: the wire stalled behind the slow
// indexer and the queue stopped at the first merged entry), so the rest
// of the events come only once the indexer waits.
func TestStoreQueueOverflowKeepsDepthExact(t *testing.T) {
	g := newGatedStore(t)
	g.gated.Store(true)
	g.modify(100, 101)
	select {
	case <-g.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the indexer never took the first event")
	}
	g.modify(101, 100+3*proof.QueueCap)
	g.waitQueue(3 * proof.QueueCap)
	if sn := g.snap(); sn.InformerRV != 100 {
		t.Errorf("informer RV %d while the store holds 100", sn.InformerRV)
	}
	close(g.gate)
	g.waitQueue(0)
	if sn := g.snap(); sn.InformerRV != 100+3*proof.QueueCap {
		t.Errorf("informer RV %d after the store caught up; want %d", sn.InformerRV, 100+3*proof.QueueCap)
	}
}

// The exporter's key informer stores a digest of each key and the RV:
// notifications carry the RV, and the queue's key hash of an object
// matches its digest's.
func TestKeyObjectIdentity(t *testing.T) {
	if keyHash("ns", "a") != storeKeyHash("ns/a") || keyHash("", "a") != storeKeyHash("a") {
		t.Error("an object's key hash differs from its store key's")
	}
	obj, _ := objectKey(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "42"}})
	rv, key, ok := storedIdentity(obj)
	if !ok || rv != 42 || key != keyHash("ns", "a") {
		t.Errorf("a key object's identity: rv %d, key %x, %v; want 42, %x", rv, key, ok, keyHash("ns", "a"))
	}
	if again, _ := objectKey(obj); again != obj {
		t.Error("the transform applied twice changed the key object")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: obj.(*keyObject).GetName(), Obj: obj}
	if rv, key, ok := storedIdentity(tomb); !ok || rv != 42 || key != keyHash("ns", "a") {
		t.Errorf("a tombstone's identity: rv %d, key %x, %v", rv, key, ok)
	}
}

// Without the monitor's Start (a library user who registers the
// collectors but never adds the monitor to a manager) nothing drains on a
// ticker what the store applied without telling a handler: the queue of a
// quiet resource grew by one per bookmark, a false backpressure signal
// (simulation corpus seed 58, issue #39's fifth premise). Every scrape
// drains it, beside the scrape (never on the reflector's goroutine, which
// would wait for a slow indexer's lock).
func TestBookmarksDrainWithoutTheTicker(t *testing.T) {
	g := newGatedStore(t)
	for i := range 10 {
		rv := strconv.Itoa(101 + i)
		g.events.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}})
		testenv.WaitFor(t, 30*time.Second, "the store at the bookmark's RV", func() (bool, error) {
			return g.inf.LastSyncResourceVersion() == rv, nil
		})
	}
	cm := map[string]string{catalog.LabelResource: "configmaps"}
	testenv.WaitFor(t, 30*time.Second, "scrapes drain the 10 bookmarks the store applied, no ticker running", func() (bool, error) {
		m, err := testenv.Gather(g.reg)
		if err != nil {
			return false, err
		}
		depth, ok := m.Value(catalog.StoreQueueDepth.Name, cm)
		return ok && depth == 0, nil
	})
}

// Bookmarks notify no handler: the store's RV shows them applied when it
// is read, every second under Start's ticker, only at each scrape where
// Start never runs. A bookmark the store applied at once must not read
// the wait for that read as wire-to-store lag (simulation page seed
// 3200561: a quiet store's bookmarks read 29.7 s at p99, and a stuck
// cache's pages blamed the client).
func TestABookmarkFoundAtTheNextScrapeHasNoStoreLag(t *testing.T) {
	g := newGatedStore(t) // the store's RV read at t0, the list's end applied
	before := g.storeLag()
	g.clock.Step(time.Second)
	g.events.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "101"}})
	testenv.WaitFor(t, 30*time.Second, "the bookmark in the store, not drained", func() (bool, error) {
		return g.inf.GetStore().LastStoreSyncResourceVersion() == "101" && g.snap().QueueDepth == 1, nil
	})
	g.clock.Step(29 * time.Second) // the next scrape
	g.waitQueue(0)
	after := g.storeLag()
	if n := after.GetSampleCount() - before.GetSampleCount(); n != 1 {
		t.Fatalf("%d wire-to-store lags observed for one bookmark, want 1", n)
	}
	if lag := after.GetSampleSum() - before.GetSampleSum(); lag != 0 {
		t.Errorf("a bookmark the store applied at once, found 29s later: wire-to-store lag %vs, want 0", lag)
	}
}

func (g *gatedStore) storeLag() *dto.Histogram {
	g.t.Helper()
	m, err := testenv.Gather(g.reg)
	if err != nil {
		g.t.Fatal(err)
	}
	h, ok := m.Histogram(catalog.StoreLag.Name, map[string]string{catalog.LabelResource: "configmaps"})
	if !ok {
		g.t.Fatal("no wire-to-store lag histogram")
	}
	return h
}
