package probe

import (
	"context"
	"crypto/sha256"

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
// watch stream as it passes, so the store holds each object's identity
// alone, a fixed-size digest of its key (see objectKey).
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
// from lw, measured by t, whose store keeps object identities only; freshen is
// its freshness read (nil: none).
func (m *Monitor) keyInformer(lw cache.ListerWatcher, t *tracker, freshen headFunc) cache.SharedIndexInformer {
	ilw := m.instrument(t, lw)
	ilw.state.freshen = freshen
	inf := cache.NewSharedIndexInformerWithOptions(ilw, &metav1.PartialObjectMetadata{},
		// an empty (not nil) Indexers map: client-go's AddIndexers panics on a nil one
		cache.SharedIndexInformerOptions{ObjectDescription: t.name, Indexers: cache.Indexers{}})
	// Setters fail only after the informer started; it has not.
	_ = inf.SetTransform(objectKey)
	m.observe(ilw.state, inf)
	return inf
}

// objectKey is an informer transform that reduces an object to its
// identity: the first 128 bits of the SHA-256 of "namespace/name" as a
// 16-byte cache.ExplicitKey, which every key function of client-go's caches
// returns as is. The signals need no object names, only a count and delete
// detection: deletes arrive as watch events, and a relist finds the objects
// deleted while the watch was down by comparing its keys with the store's,
// which a digest serves as well as a name. An informer store of such keys
// costs a map entry, the key's 16 bytes and its 16-byte interface box per
// object, whatever the length of names (see BenchmarkMetadataInformerStore).
//
// Two objects with one key would count as one. That cannot happen in
// practice: the input is unambiguous (a namespace never holds "/"), and two
// of N objects share a 128-bit digest with probability at most N²/2¹²⁹
// (10⁻²⁷ for a million objects); SHA-256 also keeps anyone who may create
// objects from choosing names that collide, which a fast non-cryptographic
// hash would not. It costs about 0.1 µs per event, next to ~100 µs of
// client-go's decoding and hand-offs.
//
// It leaves values without object metadata unchanged, so applying it twice
// (client-go does, for streamed lists) is harmless.
func objectKey(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	var buf [128]byte // namespace (≤ 63) + "/" + most names, on the stack
	in := append(append(append(buf[:0], o.GetNamespace()...), '/'), o.GetName()...)
	sum := sha256.Sum256(in)
	return cache.ExplicitKey(sum[:keyBytes]), nil
}

// keyBytes is the length of objectKey's keys: 128 bits, see objectKey.
const keyBytes = 16
