package probe

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// storeQueue follows one informer's deltas from the wire to its store: the
// watch events, bookmarks and list ends its instrumented watch received,
// in order, until the store has applied them. Between the two sits the
// informer's FIFO (filled by the reflector, which also runs the transform;
// drained by one goroutine that updates the store and its indexers and
// hands notifications to the event handlers), so what the queue holds is
// what the informer's readers cannot see yet although it arrived.
//
// An entry leaves the queue when the store provably holds it, in order
// (client-go's informers are in-order since 1.36): a handler notification
// for an object at RV r proves every entry up to r applied; one for a key
// without an RV (a store of keys) proves every entry up to the first event
// of that key; the store's own resource version (LastStoreSyncResourceVersion,
// which bookmarks and lists advance) proves the entries up to it.
//
// The queue is a fixed ring: nothing is allocated per delta. When it is
// full, neighbouring entries are merged pairwise (a batch keeps its first
// delta's receipt time and its last's RV), so a deep queue is kept at an
// even resolution: depth is exact whenever the store has applied all or
// none of each entry, and over-counts by at most one entry (about a
// sixteenth of the depth) while the store is inside one; the wire-to-store
// lag is observed once per entry, as its oldest delta saw it.
type storeQueue struct {
	ring  [storeQueueCap]pendingDelta
	head  int // index of the oldest entry
	n     int // entries in use
	depth int // deltas in the entries
}

// storeQueueCap is the number of entries of a store queue.
const storeQueueCap = 32

// deltaKind is what a pending entry stands for.
type deltaKind uint8

const (
	deltaEvent    deltaKind = iota // a watch event (Added, Modified, Deleted)
	deltaBookmark                  // a watch bookmark
	deltaList                      // the end of a List or watch-list: the store's Replace
)

// pendingDelta is a delta (or, once the ring overflowed, a batch of them)
// received on the wire and not yet applied to the store.
type pendingDelta struct {
	at     time.Time // receipt of its (first) delta
	proof  time.Time // list: a consistent list held everything committed by then (zero: not consistent)
	rv     uint64    // its (last) delta's resource version
	key    uint64    // event: keyHash of its (last) event's object
	listRV uint64    // list: the (last) list's resource version
	n      int       // deltas it stands for
	kind   deltaKind // of its last delta
	event  bool      // an event is among its deltas
	list   bool      // a list end is among its deltas
	canary bool      // an event of the canary object is among them
}

// push adds a delta received on the wire.
func (q *storeQueue) push(d pendingDelta) {
	d.event, d.list = d.kind == deltaEvent, d.kind == deltaList
	if d.list {
		d.listRV = d.rv
	}
	q.depth += d.n
	if q.n == storeQueueCap {
		q.compact()
	}
	q.ring[(q.head+q.n)%storeQueueCap] = d
	q.n++
}

// compact merges the entries pairwise, oldest first, halving their number.
func (q *storeQueue) compact() {
	old := q.ring
	for i := range q.n / 2 {
		q.ring[i] = mergeDeltas(old[(q.head+2*i)%storeQueueCap], old[(q.head+2*i+1)%storeQueueCap])
	}
	q.head, q.n = 0, q.n/2
}

// mergeDeltas returns one entry standing for a and the later b.
func mergeDeltas(a, b pendingDelta) pendingDelta {
	m := b
	m.at, m.n, m.canary = a.at, a.n+b.n, a.canary || b.canary
	if !b.event && a.event {
		m.event, m.key = true, a.key
	}
	if !b.list && a.list {
		m.list, m.listRV, m.proof = true, a.listRV, a.proof
	}
	return m
}

// dropLast takes back the newest delta: the reflector never took it (its
// watch was stopped while the delta waited to be handed over).
func (q *storeQueue) dropLast() {
	if q.n == 0 {
		return
	}
	last := &q.ring[(q.head+q.n-1)%storeQueueCap]
	q.depth--
	if last.n > 1 {
		last.n--
		return
	}
	q.n--
}

// oldest returns the receipt time of the oldest delta waiting.
func (q *storeQueue) oldest() (time.Time, bool) {
	if q.n == 0 {
		return time.Time{}, false
	}
	return q.ring[q.head].at, true
}

// popApplied moves the entries the store has applied into out, oldest
// first, and returns how many. limit is an RV the store holds (0: none
// known); key, when not 0, is the keyHash of an object whose notification
// was handed out; loose, with no RV known, counts the bookmarks and list
// ends at the head as applied (a store that does not report its RV).
func (q *storeQueue) popApplied(limit, key uint64, loose bool, out *[storeQueueCap]pendingDelta) int {
	through := -1 // the last entry proven applied
scan:
	for i := range q.n {
		d := &q.ring[(q.head+i)%storeQueueCap]
		switch {
		case limit != 0 && d.rv <= limit:
			through = i
			continue
		case !d.event:
			if loose {
				through = i
			}
			continue // a later event's notification proves it applied
		case key != 0 && d.key == key:
			through, key = i, 0 // entries after it only by limit
			continue
		}
		break scan
	}
	k := through + 1
	for i := range k {
		out[i] = q.ring[(q.head+i)%storeQueueCap]
		q.depth -= out[i].n
	}
	q.head, q.n = (q.head+k)%storeQueueCap, q.n-k
	return k
}

// popAll moves every entry into out and returns how many.
func (q *storeQueue) popAll(out *[storeQueueCap]pendingDelta) int {
	k := q.n
	for i := range k {
		out[i] = q.ring[(q.head+i)%storeQueueCap]
	}
	q.head, q.n, q.depth = 0, 0, 0
	return k
}

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
		if o, isObj := d.Obj.(metav1.Object); isObj {
			rv, _ = parseRV(o.GetResourceVersion())
		}
		if _, digest := d.Obj.(cache.ExplicitKey); digest {
			return rv, digestHash(d.Key), true
		}
		return rv, storeKeyHash(d.Key), true
	}
	switch o := obj.(type) {
	case metav1.Object:
		rv, _ = parseRV(o.GetResourceVersion())
		return rv, keyHash(o.GetNamespace(), o.GetName()), true
	case cache.ExplicitKey:
		return 0, digestHash(string(o)), true
	}
	return 0, 0, false
}
