package probe

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// NewMetadataInformer returns an instrumented metadata-only informer for gvr
// across all namespaces, measured by tracker. No object body is ever
// fetched, and its store keeps only what the signals use: the signals read
// RVs from the watch stream as it passes (see Instrument), so the store
// holds each object's key alone, as a cache.ExplicitKey ("namespace/name",
// or "name" for cluster-scoped objects; see ObjectKey). Its event handlers
// receive those keys, not objects; use Instrument and Observe on an informer
// of your own to keep objects.
func (m *Monitor) NewMetadataInformer(client metadata.Interface, gvr schema.GroupVersionResource, tracker *Tracker) cache.SharedIndexInformer {
	res := client.Resource(gvr)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}, client)
	return m.newKeyInformer(lw, tracker)
}

// newKeyInformer returns an instrumented informer of PartialObjectMetadata
// from lw whose store keeps object keys only.
func (m *Monitor) newKeyInformer(lw cache.ListerWatcher, tracker *Tracker) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformerWithOptions(m.Instrument(tracker, lw), &metav1.PartialObjectMetadata{},
		cache.SharedIndexInformerOptions{ObjectDescription: tracker.name})
	// Setters fail only after the informer started; it has not.
	_ = inf.SetTransform(ObjectKey)
	m.Observe(tracker, inf)
	return inf
}

// Observe connects an informer to its tracker: it counts the cached objects
// and reports the informer's sync state. Call it before the informer starts.
func (m *Monitor) Observe(tracker *Tracker, inf cache.SharedIndexInformer) {
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { tracker.objects.Add(1) },
		DeleteFunc: func(any) { tracker.objects.Add(-1) },
	})
	tracker.mu.Lock()
	tracker.synced = inf.HasSynced
	tracker.mu.Unlock()
	log := m.opts.Logger.WithValues("resource", tracker.name)
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Info("list/watch failed; the informer retries with backoff", "err", err)
	})
}

// ObjectKey is an informer transform that reduces an object to its store
// key, a cache.ExplicitKey, which every key function of client-go's caches
// returns as is: an informer store of keys costs a few dozen bytes per
// object instead of a few hundred for slimmed metadata (see
// BenchmarkMetadataInformerStore). It leaves keys and
// values without object metadata unchanged, so applying it twice (client-go
// does, for streamed lists) is harmless.
func ObjectKey(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	if ns := o.GetNamespace(); ns != "" {
		return cache.ExplicitKey(ns + "/" + o.GetName()), nil
	}
	return cache.ExplicitKey(o.GetName()), nil
}
