package probe

import (
	"crypto/sha256"
	"encoding/binary"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// keyBytes is the length of an object's digest: 128 bits, see digestOf.
const keyBytes = 16

// digest identifies an object by its key in the exporter's key informers.
type digest [keyBytes]byte

// digestOf returns the digest of the object namespace/name: the first 128
// bits of the SHA-256 of "namespace/name" (its store key).
//
// The signals need no object names, only a count, delete detection and the
// version the store holds: deletes arrive as watch events, and a relist
// finds the objects deleted while the watch was down by comparing its keys
// with the store's, which a digest serves as well as a name.
//
// Two objects with one digest would count as one. That cannot happen in
// practice: the input is unambiguous (a namespace never holds "/"), and two
// of N objects share a 128-bit digest with probability at most N²/2¹²⁹
// (10⁻²⁷ for a million objects); SHA-256 also keeps anyone who may create
// objects from choosing names that collide, which a fast non-cryptographic
// hash would not. It is computed once per event, as the event is decoded.
func digestOf[S ~string | ~[]byte](namespace, name S) digest {
	var buf [320]byte // namespace (≤ 63) + "/" + name (≤ 253), on the stack
	in := append(append(append(buf[:0], namespace...), '/'), name...)
	sum := sha256.Sum256(in)
	return digest(sum[:keyBytes])
}

// hash identifies the digest's object in the store queue: its first 8
// bytes (0 is reserved for "no key").
func (d *digest) hash() uint64 { return max(binary.LittleEndian.Uint64(d[:8]), 1) }

// keyHash is the queue's key of the object namespace/name.
func keyHash(namespace, name string) uint64 {
	d := digestOf(namespace, name)
	return d.hash()
}

// digestHash is the queue's key of an object whose store key is its digest.
func digestHash(key string) uint64 {
	if len(key) < 8 {
		return 1
	}
	return max(binary.LittleEndian.Uint64([]byte(key[:8])), 1)
}

// storeKeyHash is the queue's key of a store key "namespace/name" (or "name").
func storeKeyHash(key string) uint64 {
	for i := range len(key) {
		if key[i] == '/' {
			return keyHash(key[:i], key[i+1:])
		}
	}
	return keyHash("", key)
}

// keyObject is what a key informer knows of an object: the digest of its
// key, its resource version (rv; 0: not an integer) as sent, and whether it
// is the canary (with its heartbeat: when the write it carries was sent);
// for a bookmark, whether it ends a watch-list's initial
// events. It implements runtime.Object and metav1.Object so that client-go's
// reflector and key functions read it (its name is its digest, it has no
// namespace); everything else is empty, and setters do nothing. It is never
// changed once made, so strings read from it stay valid.
type keyObject struct {
	digest  digest
	rv      uint64
	canary  bool
	stamp   int64 // the canary's heartbeat, UnixNano; 0: none
	initEnd bool  // a bookmark with k8s.io/initial-events-end: "true"
	rvLen   uint8
	rvText  [20]byte // the resource version as sent, when it fits
	rvLong  string   // or else
}

// newKeyObject returns the keyObject of an object at resource version rv.
func newKeyObject(d digest, rvs []byte) *keyObject {
	k := &keyObject{digest: d}
	if len(rvs) <= len(k.rvText) {
		k.rvLen = uint8(copy(k.rvText[:], rvs))
	} else {
		k.rvLong = string(rvs)
	}
	k.rv, _ = proof.ParseRV(k.GetResourceVersion())
	return k
}

// objectKey is the key informer's transform of an object of any kind (as a
// ListerWatcher other than its own delivers, or a relist's items): its
// keyObject. A keyObject passes through unchanged.
func objectKey(obj any) (any, error) {
	switch o := obj.(type) {
	case *keyObject:
		return o, nil
	case metav1.Object:
		return newKeyObject(digestOf(o.GetNamespace(), o.GetName()), []byte(o.GetResourceVersion())), nil
	}
	return obj, nil
}

// GetName returns the digest as a string without copying it: a keyObject
// never changes, so the string stays valid as long as it.
func (k *keyObject) GetName() string { return unsafe.String(&k.digest[0], keyBytes) }

// GetResourceVersion returns the resource version as sent, without copying
// it (see GetName).
func (k *keyObject) GetResourceVersion() string {
	if k.rvLong != "" {
		return k.rvLong
	}
	if k.rvLen == 0 {
		return ""
	}
	return unsafe.String(&k.rvText[0], k.rvLen)
}

// initialEventsEnd is the annotation of the bookmark that ends a
// watch-list's initial events; read-only.
var initialEventsEndAnnotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}

// GetAnnotations returns the initial-events-end annotation of the bookmark
// that carries it (the reflector and the instrumented watch read it), and
// nothing otherwise.
func (k *keyObject) GetAnnotations() map[string]string {
	if k.initEnd {
		return initialEventsEndAnnotations
	}
	return nil
}

// GetObjectKind implements runtime.Object: a keyObject has no kind.
func (k *keyObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: a keyObject never changes.
func (k *keyObject) DeepCopyObject() runtime.Object { return k }

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
func (k *keyObject) SetAnnotations(map[string]string)                           {}
func (k *keyObject) GetFinalizers() []string                                    { return nil }
func (k *keyObject) SetFinalizers([]string)                                     {}
func (k *keyObject) GetOwnerReferences() []metav1.OwnerReference                { return nil }
func (k *keyObject) SetOwnerReferences([]metav1.OwnerReference)                 {}
func (k *keyObject) GetManagedFields() []metav1.ManagedFieldsEntry              { return nil }
func (k *keyObject) SetManagedFields(managedFields []metav1.ManagedFieldsEntry) {}

// storedIdentity returns what a handler notification's object tells about
// the store: its RV (0 when it has none that is an integer) and its key's
// hash. ok is false for an object the queue cannot match (a transform that
// keeps neither metadata nor a key).
func storedIdentity(obj any) (rv, key uint64, ok bool) {
	if d, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		if k, isKey := d.Obj.(*keyObject); isKey {
			return k.rv, k.digest.hash(), true
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
		return o.rv, o.digest.hash(), true
	case metav1.Object:
		rv, _ = proof.ParseRV(o.GetResourceVersion())
		return rv, keyHash(o.GetNamespace(), o.GetName()), true
	case cache.ExplicitKey:
		return 0, digestHash(string(o)), true
	}
	return 0, 0, false
}
