package proof

import "time"

// Queue follows one informer's deltas from the wire to its store: the
// watch events, bookmarks and list ends its instrumented watch received,
// in order, until the store has applied them. Between the two sits the
// informer's FIFO (filled by the reflector, drained by one goroutine that
// updates the store and its indexers and then notifies the handlers), so
// what the queue holds is what the informer's readers cannot see yet
// although it arrived.
//
// An entry leaves the queue when the store provably holds it, in order
// (client-go's informers are in-order since 1.36): a handler notification
// of an object at RV r proves every entry up to r applied (PopRV); so does
// the store's own resource version (LastStoreSyncResourceVersion, which
// bookmarks and lists advance). A notification that carries no RV (a store
// of keys) proves one event applied, the oldest waiting, when it is of the
// notified key (PopKey): one at a time, so a hot object's burst drains one
// event per notification, never a batch per notification.
//
// The queue is a fixed ring: nothing is allocated per delta. When it is
// full, neighbouring entries are merged pairwise (a batch keeps its first
// delta's receipt time and its last's RV, and its events' key when they
// share one), so a deep queue is kept at an even resolution: depth is
// exact whenever the store has applied all or none of each entry, and
// over-counts by at most one entry (about a sixteenth of the depth) while
// the store is inside one; it never under-counts.
type Queue struct {
	ring  [QueueCap]entry
	head  int // index of the oldest entry
	n     int // entries in use
	depth int // deltas in the entries
}

// QueueCap is the number of entries of a queue.
const QueueCap = 32

// Kind is what a delta is.
type Kind uint8

// Kinds of deltas.
const (
	Event    Kind = iota // a watch event (Added, Modified, Deleted)
	Bookmark             // a watch bookmark
	ListEnd              // the end of a List or watch-list: the store's Replace
)

// Delta is one delta received on the wire.
type Delta struct {
	At   time.Time // received
	RV   uint64
	Kind Kind
	// Key identifies an event's object (a hash of its store key; 0: none).
	Key uint64
	// Began, for a list end, is when the list began; Consistent when it
	// read at RV "" (it held everything committed by then).
	Began      time.Time
	Consistent bool
	// Canary: an event of the canary object; Stamp, the write it carries
	// was sent at (the object's heartbeat, UnixNano; 0: unknown).
	Canary bool
	Stamp  int64
	// Deleted: an event that deleted its object (or took it out of a
	// selected scope).
	Deleted bool
}

// entry is a delta or, once the ring overflowed, a batch of them.
type entry struct {
	at         time.Time // receipt of its first delta
	rv         uint64    // its last delta's RV; 0 once an event of it was applied alone
	n          int       // deltas it stands for
	events     int       // events among them
	key        uint64    // the key of all its events, when they share one
	list       bool      // a list end is among its deltas
	listRV     uint64    // the last list end's RV
	began      time.Time // when the last list end's list began
	consistent bool      // the last list end's list was consistent
	canary     bool
	stamp      int64 // the latest heartbeat among its canary events
	kind       Kind  // its last delta's
	deleted    bool  // its last delta deleted its object
}

// Applied is what a popped entry tells the proofs: the store holds its
// deltas since now.
type Applied struct {
	At     time.Time // receipt of its first delta
	RV     uint64    // its last delta's RV; 0: unknown (an event applied alone from a batch)
	Kind   Kind      // its last delta's
	Deltas int
	Events int
	// Key is the key hash of its event, for a single event (Deltas 1).
	Key    uint64
	List   bool
	ListRV uint64
	// ListBegan is when the list began; Consistent when it read at RV "".
	ListBegan  time.Time
	Consistent bool
	Canary     bool
	// Stamp is the latest heartbeat of its canary events: when the write
	// it carries was sent (UnixNano; 0: unknown).
	Stamp int64
	// Deleted: its event deleted its object, for a single event.
	Deleted bool
}

// Push adds a delta received on the wire.
func (q *Queue) Push(d Delta) {
	e := entry{at: d.At, rv: d.RV, n: 1, canary: d.Canary, stamp: d.Stamp, kind: d.Kind, deleted: d.Deleted}
	switch d.Kind {
	case Event:
		e.events, e.key = 1, d.Key
	case ListEnd:
		e.list, e.listRV, e.began, e.consistent = true, d.RV, d.Began, d.Consistent
	}
	q.depth++
	if q.n == QueueCap {
		q.compact()
	}
	q.ring[(q.head+q.n)%QueueCap] = e
	q.n++
}

// compact merges the entries pairwise, oldest first, halving their number.
func (q *Queue) compact() {
	old := q.ring
	for i := range q.n / 2 {
		q.ring[i] = merge(old[(q.head+2*i)%QueueCap], old[(q.head+2*i+1)%QueueCap])
	}
	q.head, q.n = 0, q.n/2
}

// merge returns one entry standing for a and the later b.
func merge(a, b entry) entry {
	m := b
	m.at, m.n, m.events, m.canary, m.stamp = a.at, a.n+b.n, a.events+b.events, a.canary || b.canary, max(a.stamp, b.stamp)
	switch {
	case a.events == 0:
	case b.events == 0:
		m.key = a.key
	case a.key != b.key:
		m.key = 0
	}
	if !b.list && a.list {
		m.list, m.listRV, m.began, m.consistent = true, a.listRV, a.began, a.consistent
	}
	return m
}

// DropLast takes back the newest delta: the reflector never took it (its
// watch was stopped while the delta waited to be handed over).
func (q *Queue) DropLast() {
	if q.n == 0 {
		return
	}
	last := &q.ring[(q.head+q.n-1)%QueueCap]
	q.depth--
	if last.n > 1 {
		last.n--
		return
	}
	q.n--
}

// Depth returns the deltas waiting.
func (q *Queue) Depth() int { return q.depth }

// Oldest returns the receipt time of the oldest delta waiting.
func (q *Queue) Oldest() (time.Time, bool) {
	if q.n == 0 {
		return time.Time{}, false
	}
	return q.ring[q.head].at, true
}

// NeedsStoreRV reports whether only the store's own resource version can
// prove the oldest entry applied: it holds no event (a bookmark, a list
// end: no handler hears of them), or events of several keys merged (a
// notification without an RV cannot be matched to them).
func (q *Queue) NeedsStoreRV() bool {
	if q.n == 0 {
		return false
	}
	e := &q.ring[q.head]
	return e.events == 0 || e.key == 0
}

// Empty reports whether nothing waits.
func (q *Queue) Empty() bool { return q.n == 0 }

func (q *Queue) pop(out []Applied) []Applied {
	e := q.ring[q.head]
	q.head, q.n, q.depth = (q.head+1)%QueueCap, q.n-1, q.depth-e.n
	a := Applied{At: e.at, RV: e.rv, Kind: e.kind, Deltas: e.n, Events: e.events, List: e.list, ListRV: e.listRV, ListBegan: e.began, Consistent: e.consistent, Canary: e.canary, Stamp: e.stamp}
	if e.n == 1 {
		a.Key, a.Deleted = e.key, e.deleted
	}
	return append(out, a)
}

// PopRV pops the entries the store holds once it holds rv (a notification
// of an object at rv, or the store's own resource version), oldest first,
// appending them to out.
func (q *Queue) PopRV(rv uint64, out []Applied) []Applied {
	for q.n > 0 && q.ring[q.head].rv != 0 && q.ring[q.head].rv <= rv {
		out = q.pop(out)
	}
	return out
}

// PopKey handles a notification of the object with key hash key that
// carries no RV (a store of keys): the bookmarks and list ends before the
// oldest event are applied, and that event too when it is of the notified
// key. Another key (a relist's notification, a resync) proves nothing.
func (q *Queue) PopKey(key uint64, out []Applied) []Applied {
	for q.n > 0 && q.ring[q.head].events == 0 {
		out = q.pop(out)
	}
	if q.n == 0 || key == 0 {
		return out
	}
	e := &q.ring[q.head]
	if e.key != key {
		return out
	}
	if e.n == 1 {
		return q.pop(out)
	}
	// one event of a batch: applied, at an RV the batch does not tell
	e.n, e.events, q.depth = e.n-1, e.events-1, q.depth-1
	a := Applied{At: e.at, Kind: Event, Deltas: 1, Events: 1}
	if e.events == 0 {
		e.key = 0
	}
	return append(out, a)
}

// PopAll pops every entry: the informer has no store to watch, so deltas
// count on receipt.
func (q *Queue) PopAll(out []Applied) []Applied {
	for q.n > 0 {
		out = q.pop(out)
	}
	return out
}
