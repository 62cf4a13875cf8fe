package probe

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"
)

// A scrape may come while an informer is being built: Monitor.Instrument
// lists the informer before it attaches the informer's own answers
// (HasSynced, IsStopped, the store's RV) and its freshness read, which a
// scrape reads. They were plain fields, and the race detector caught a scrape reading them while
// controller-runtime's cache built an informer (ctrlcache's TestHook, in
// the gate's race stage); under -race this test failed the same way.
func TestAScrapeWhileInformersAreBuilt(t *testing.T) {
	// a head probe (never started here) gives each informer a freshness
	// read, set while it is built too
	mon := New(Options{HeadProbe: &rest.Config{Host: "https://127.0.0.1:1"}})
	reg := prometheus.NewRegistry()
	if err := mon.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.PartialObjectMetadataList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	for i := range 50 {
		gvr := schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: fmt.Sprintf("things%d", i)}
		inf := mon.Instrument(gvr, lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
		})
		if inf == nil {
			t.Fatalf("Instrument built no informer for %v", gvr)
		}
	}
	cancel()
	wg.Wait()
}
