package probe

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// newKeyInformer returns an instrumented metadata-only informer for gvr
// across all namespaces, measured by r. No object body is ever fetched, and
// its store keeps only what the signals use: the signals read RVs from the
// watch stream as it passes, so the store holds each object's identity
// alone, a fixed-size digest of its key (see objectKey).
func (m *Monitor) newKeyInformer(client metadata.Interface, gvr schema.GroupVersionResource, r *resource) cache.SharedIndexInformer {
	res := client.Resource(gvr)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}, client)
	return m.keyInformer(lw, r, metadataHead(client, gvr))
}

// keyInformer returns an instrumented informer of PartialObjectMetadata
// from lw, measured by r, whose store keeps object identities only; freshen
// is its freshness read on its own connection (nil: none).
func (m *Monitor) keyInformer(lw cache.ListerWatcher, r *resource, freshen headFunc) cache.SharedIndexInformer {
	ilw := m.instrument(r, lw)
	m.freshenWith(ilw.state, freshen, true)
	inf := cache.NewSharedIndexInformerWithOptions(ilw, &metav1.PartialObjectMetadata{},
		// an empty (not nil) Indexers map: client-go's AddIndexers panics on a nil one
		cache.SharedIndexInformerOptions{ObjectDescription: r.name, Indexers: cache.Indexers{}})
	// Setters fail only after the informer started; it has not.
	_ = inf.SetTransform(objectKey)
	ilw.state.attach(inf, m.opts.Logger)
	return inf
}

// objectKey is an informer transform that reduces an object to its
// identity and version: a keyObject holding the first 128 bits of the
// SHA-256 of "namespace/name" (its store key) and its resource version.
// The signals need no object names, only a count, delete detection and
// the version the store holds: deletes arrive as watch events, and a
// relist finds the objects deleted while the watch was down by comparing
// its keys with the store's, which a digest serves as well as a name; the
// version rides every handler notification, so the informer's queue knows
// exactly which delta the store applied (and client-go's store keeps its
// own resource version current with every event). A keyObject costs 24
// bytes and holds no pointer, whatever the length of names (see
// BenchmarkMetadataInformerStore).
//
// Two objects with one key would count as one. That cannot happen in
// practice: the input is unambiguous (a namespace never holds "/"), and two
// of N objects share a 128-bit digest with probability at most N²/2¹²⁹
// (10⁻²⁷ for a million objects); SHA-256 also keeps anyone who may create
// objects from choosing names that collide, which a fast non-cryptographic
// hash would not. It costs about 0.1 µs per event, next to ~100 µs of
// client-go's decoding and hand-offs.
//
// A keyObject passes through unchanged, so applying it twice (client-go
// does, for streamed lists) is harmless.
func objectKey(obj any) (any, error) {
	switch o := obj.(type) {
	case *keyObject:
		return o, nil
	case metav1.Object:
		var buf [128]byte // namespace (≤ 63) + "/" + most names, on the stack
		in := append(append(append(buf[:0], o.GetNamespace()...), '/'), o.GetName()...)
		sum := sha256.Sum256(in)
		k := &keyObject{}
		copy(k.digest[:], sum[:keyBytes])
		k.rv, _ = proof.ParseRV(o.GetResourceVersion())
		return k, nil
	}
	return obj, nil
}

// keyObject is what the exporter's key informer stores of an object: a
// digest of its key (its name, and so its store key) and its resource
// version (0: not an integer). It implements metav1.Object so that
// client-go's key function and store read both; everything else is empty,
// and setters do nothing. It is never changed once made.
type keyObject struct {
	digest [keyBytes]byte
	rv     uint64
}

// GetName returns the digest as a string without copying it: a keyObject
// never changes, so the string stays valid as long as it.
func (k *keyObject) GetName() string { return unsafe.String(&k.digest[0], keyBytes) }

func (k *keyObject) GetResourceVersion() string {
	if k.rv == 0 {
		return ""
	}
	return strconv.FormatUint(k.rv, 10)
}

func (k *keyObject) GetNamespace() string                                       { return "" }
func (k *keyObject) SetNamespace(string)                                        {}
func (k *keyObject) SetName(string)                                             {}
func (k *keyObject) GetGenerateName() string                                    { return "" }
func (k *keyObject) SetGenerateName(string)                                     {}
func (k *keyObject) GetUID() types.UID                                          { return "" }
func (k *keyObject) SetUID(types.UID)                                           {}
func (k *keyObject) SetResourceVersion(string)                                  {}
func (k *keyObject) GetGeneration() int64                                       { return 0 }
func (k *keyObject) SetGeneration(int64)                                        {}
func (k *keyObject) GetSelfLink() string                                        { return "" }
func (k *keyObject) SetSelfLink(string)                                         {}
func (k *keyObject) GetCreationTimestamp() metav1.Time                          { return metav1.Time{} }
func (k *keyObject) SetCreationTimestamp(metav1.Time)                           {}
func (k *keyObject) GetDeletionTimestamp() *metav1.Time                         { return nil }
func (k *keyObject) SetDeletionTimestamp(*metav1.Time)                          {}
func (k *keyObject) GetDeletionGracePeriodSeconds() *int64                      { return nil }
func (k *keyObject) SetDeletionGracePeriodSeconds(*int64)                       {}
func (k *keyObject) GetLabels() map[string]string                               { return nil }
func (k *keyObject) SetLabels(map[string]string)                                {}
func (k *keyObject) GetAnnotations() map[string]string                          { return nil }
func (k *keyObject) SetAnnotations(map[string]string)                           {}
func (k *keyObject) GetFinalizers() []string                                    { return nil }
func (k *keyObject) SetFinalizers([]string)                                     {}
func (k *keyObject) GetOwnerReferences() []metav1.OwnerReference                { return nil }
func (k *keyObject) SetOwnerReferences([]metav1.OwnerReference)                 {}
func (k *keyObject) GetManagedFields() []metav1.ManagedFieldsEntry              { return nil }
func (k *keyObject) SetManagedFields(managedFields []metav1.ManagedFieldsEntry) {}

// keyBytes is the length of objectKey's keys: 128 bits, see objectKey.
const keyBytes = 16

// keyHash identifies an object's store key in the queue: the first 8
// bytes of the digest objectKey stores for it (so the notifications of the
// exporter's key informers, which carry only that digest, match the events
// they apply). 0 is reserved for "no key".
func keyHash(namespace, name string) uint64 {
	var buf [128]byte
	in := append(append(append(buf[:0], namespace...), '/'), name...)
	sum := sha256.Sum256(in)
	return digestHash(string(sum[:keyBytes]))
}

// digestHash is keyHash of an object whose store key is objectKey's digest.
func digestHash(digest string) uint64 {
	if len(digest) < 8 {
		return 1
	}
	return max(binary.LittleEndian.Uint64([]byte(digest[:8])), 1)
}

// storeKeyHash is keyHash of a store key "namespace/name" (or "name").
func storeKeyHash(key string) uint64 {
	for i := range len(key) {
		if key[i] == '/' {
			return keyHash(key[:i], key[i+1:])
		}
	}
	return keyHash("", key)
}

// storedIdentity returns what a handler notification's object tells about
// the store: its RV (0 when it has none that is an integer) and its key's
// hash. ok is false for an object the queue cannot match (a transform that
// keeps neither metadata nor a key).
func storedIdentity(obj any) (rv, key uint64, ok bool) {
	if d, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		if k, isKey := d.Obj.(*keyObject); isKey {
			return k.rv, digestHash(k.GetName()), true
		}
		if o, isObj := d.Obj.(metav1.Object); isObj {
			rv, _ = proof.ParseRV(o.GetResourceVersion())
		}
		if _, digest := d.Obj.(cache.ExplicitKey); digest {
			return rv, digestHash(d.Key), true
		}
		return rv, storeKeyHash(d.Key), true
	}
	switch o := obj.(type) {
	case *keyObject:
		return o.rv, digestHash(o.GetName()), true
	case metav1.Object:
		rv, _ = proof.ParseRV(o.GetResourceVersion())
		return rv, keyHash(o.GetNamespace(), o.GetName()), true
	case cache.ExplicitKey:
		return 0, digestHash(string(o)), true
	}
	return 0, 0, false
}
