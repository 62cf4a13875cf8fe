package probe

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// An extension API server may serve resource versions that are not
// integers: the probe treats them as opaque — it reports them, skips lag
// math and keeps running — instead of crashing or inventing numbers.
func TestOpaqueResourceVersions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := watch.NewFake()
	lw := &cache.ListWatch{ // a fake: it cannot stream lists
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "opaque-list-token"},
				Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "tok-1"}}}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return events, nil },
	}
	mon := New(Options{ProbeInterval: 100 * time.Millisecond})
	reg := prometheus.NewRegistry()
	if err := mon.Register(reg); err != nil {
		t.Fatal(err)
	}
	tr := mon.track(testGVR("flunders.wardle.example.com"), "aggregated")
	ilw := mon.instrument(tr, cache.ToListWatcherWithWatchListSemantics(lw, noWatchList{}))
	inf := cache.NewSharedIndexInformer(ilw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	ilw.state.attach(inf, mon.opts.Logger)
	tr.space.Load().addSource(tr.name, func(context.Context) (string, error) { return "head-token", nil })
	go inf.RunWithContext(ctx)
	go func() { _ = mon.Start(ctx) }()
	testenv.WaitFor(t, 30*time.Second, "sync", func() (bool, error) { return inf.HasSynced(), nil })
	events.Modify(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "tok-2"}})

	res := map[string]string{catalog.LabelResource: "flunders.wardle.example.com"}
	var m testenv.Metrics
	testenv.WaitFor(t, 30*time.Second, "opaque RVs reported by the sync and head probes", func() (bool, error) {
		var err error
		if m, err = testenv.Gather(reg); err != nil {
			return false, err
		}
		sync, _ := m.Value(catalog.ListErrors.Name, map[string]string{catalog.LabelResource: res[catalog.LabelResource], catalog.LabelReason: catalog.ReasonOpaqueRV})
		head, _ := m.Value(catalog.HeadProbeErrors.Name, map[string]string{catalog.LabelResource: res[catalog.LabelResource], catalog.LabelReason: catalog.ReasonOpaqueRV})
		return sync == 1 && head == 1, nil
	})
	for _, fam := range []catalog.Metric{catalog.ResourceVersionLag, catalog.InformerResourceVersion, catalog.HeadResourceVersion, catalog.CacheStaleness} {
		if v, ok := m.Value(fam.Name, res); ok {
			t.Errorf("%s = %v for opaque resource versions; want no series", fam.Name, v)
		}
	}
	if v, _ := m.Value(catalog.InformerSynced.Name, res); v != 1 {
		t.Errorf("synced = %v; an opaque RV must not stop the informer", v)
	}
	if v, _ := m.Value(catalog.Objects.Name, res); v != 1 {
		t.Errorf("objects = %v; want 1", v)
	}
}

// noWatchList marks a client that cannot stream lists, as client-go's fakes do.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }
