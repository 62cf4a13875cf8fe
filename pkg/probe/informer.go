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

// newKeyInformer returns an instrumented metadata-only informer for gvr
// across all namespaces, measured by t. No object body is ever fetched, and
// its store keeps only what the signals use: the signals read RVs from the
// watch stream as it passes, so the store holds each object's key alone, as
// a cache.ExplicitKey ("namespace/name", or "name" for cluster-scoped
// objects; see objectKey).
func (m *Monitor) newKeyInformer(client metadata.Interface, gvr schema.GroupVersionResource, t *tracker) cache.SharedIndexInformer {
	res := client.Resource(gvr)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}, client)
	return m.keyInformer(lw, t, metadataHead(client, gvr))
}

// keyInformer returns an instrumented informer of PartialObjectMetadata
// from lw, measured by t, whose store keeps object keys only; freshen is
// its freshness read (nil: none).
func (m *Monitor) keyInformer(lw cache.ListerWatcher, t *tracker, freshen headFunc) cache.SharedIndexInformer {
	ilw := m.instrument(t, lw)
	ilw.state.freshen = freshen
	inf := cache.NewSharedIndexInformerWithOptions(ilw, &metav1.PartialObjectMetadata{},
		cache.SharedIndexInformerOptions{ObjectDescription: t.name})
	// Setters fail only after the informer started; it has not.
	_ = inf.SetTransform(objectKey)
	m.observe(ilw.state, inf)
	return inf
}

// objectKey is an informer transform that reduces an object to its store
// key, a cache.ExplicitKey, which every key function of client-go's caches
// returns as is: an informer store of keys costs a few dozen bytes per
// object instead of a few hundred for slimmed metadata (see
// BenchmarkMetadataInformerStore). It leaves keys and values without object
// metadata unchanged, so applying it twice (client-go does, for streamed
// lists) is harmless.
func objectKey(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	if ns := o.GetNamespace(); ns != "" {
		return cache.ExplicitKey(ns + "/" + o.GetName()), nil
	}
	return cache.ExplicitKey(o.GetName()), nil
}
