package probe

import (
	"time"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// What the store applied: the store (keystore.go's, or the handler
// notification of an informer of your own) tells drain which deltas it
// holds; they leave the queue (stage 2) and reach the proofs (stage 3).
// The way of one event enters this file from the store and leaves it for
// internal/proof: it never comes back to informer.go, where the delta was
// received and queued.

// notified is called with the object of each handler notification of the
// informer: the store has applied it and, in order, what came before it.
func (in *informer) notified(obj any) {
	rv, key, ok := storedIdentity(obj)
	if !ok {
		// a transform that keeps neither metadata nor a key: the queue
		// cannot tell when the store applies a delta, so deltas count on
		// receipt from now on rather than pile up unmatched
		in.queueMu.Lock()
		in.counted = true
		var buf [proof.QueueCap]proof.Applied
		out := in.queue.PopAll(buf[:0])
		in.queueMu.Unlock()
		in.apply(out, in.res.clock.Now(), nil)
		return
	}
	in.drain(rv, key)
}

// drain pops the deltas a notification of the object at rv (0: it carries
// none) with key hash key proves applied, and, when bookmarks or list ends
// wait at the head of the queue, those up to the store's own resource
// version; it hands them to the proofs. It is the one place the queue is
// drained: the handler calls it with each notification, the monitor's
// ticker (through drainStore) with none, and, where Start never runs,
// each scrape. It may wait for the store's lock, never while it holds the
// queue's.
//
// A notification comes as the store applies its delta; the store's RV is
// read only at the ticker (every second) or at a scrape (every 30 s or
// so): what it shows applied was applied by then, and, if it was on the
// wire at the read before, after that read. Its wire-to-store lag is
// counted from that read, not from this one: the wait for the poll is not
// the store's (simulation page seed 3200561: where Start never runs, a
// quiet store's bookmarks read 29.7 s of wire-to-store lag at p99, and a
// stuck cache's pages blamed the client).
func (in *informer) drain(rv, key uint64) {
	var buf [2 * proof.QueueCap]proof.Applied
	in.queueMu.Lock()
	out := buf[:0]
	switch {
	case rv != 0:
		out = in.queue.PopRV(rv, out)
	case key != 0:
		out = in.queue.PopKey(key, out)
	}
	storeRV := in.hook().storeRV
	waiting := storeRV != nil && in.queue.NeedsStoreRV()
	in.queueMu.Unlock()
	notified := len(out)
	var polled time.Time
	if waiting {
		// bookmarks and list ends notify no handler: the store's RV tells
		if srv, ok := proof.ParseRV(storeRV()); ok {
			now := in.res.clock.Now()
			in.queueMu.Lock()
			out = in.queue.PopRV(srv, out)
			polled, in.polled = in.polled, now
			in.queueMu.Unlock()
		}
	}
	in.apply(out, in.res.clock.Now(), func(i int) (time.Time, bool) { return polled, i >= notified })
}

// drainStore drains, in a goroutine of its own, what the store applied
// without notifying a handler (bookmarks, list ends), if the queue's
// oldest entry waits for it: the store's lock may be held by a slow
// indexer, and neither the monitor's ticker nor a scrape waits for it.
func (in *informer) drainStore() {
	in.queueMu.Lock()
	waiting := in.hook().storeRV != nil && in.queue.NeedsStoreRV()
	in.queueMu.Unlock()
	if !waiting || !in.draining.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer in.draining.Store(false)
		in.drain(0, 0)
	}()
}

// ---- stage 3: the proofs ----

// owe records, for a resource with several informers, what the deltas
// applied tell of what they owe one another (see owing).
func (in *informer) owe(siblings []*informer, ds []proof.Applied, now time.Time) {
	var buf [2 * proof.QueueCap]change
	changes := buf[:0]
	var l relist
	for _, d := range ds {
		if d.List {
			l = relist{rv: d.ListRV, began: d.ListBegan, consistent: d.Consistent}
		}
		if d.Kind == proof.Event && d.RV != 0 && d.Deltas == 1 && d.Key != 0 {
			changes = append(changes, change{key: d.Key, rv: d.RV, deleted: d.Deleted})
		}
	}
	in.res.owing.applied(in, siblings, l, changes, now)
}

// env returns what the proofs read of the informer's surroundings; the
// caller holds proofMu, wireMu and the space's lock.
func (in *informer) env(sp *space, now time.Time) proof.Env {
	return proof.Env{Now: now, Space: sp.core, Watch: &in.wire, ProbeInterval: in.res.interval, OwnReads: in.readsOwn() && in.hook().freshen != nil, Unsettled: sp.unsettledLocked(in.res.name), Incident: in.res.lastIncident()}
}

// apply records that the store holds ds since now, oldest first. polled,
// when not nil, says whether the i-th delta was found in the store by
// reading its RV rather than applied at now, and when the store's RV was
// read before (zero: never): the store did not hold the delta then if it
// was on the wire, so its wire-to-store lag is counted to then, a lower
// bound.
func (in *informer) apply(ds []proof.Applied, now time.Time, polled func(i int) (before time.Time, ok bool)) {
	if len(ds) == 0 {
		return
	}
	r := in.res
	canary := r.canary.Load()
	type delivery struct {
		lag             time.Duration
		bounded, ok     bool
		rv              uint64
		storeLagSeconds float64
	}
	var obs [2 * proof.QueueCap]delivery
	n := 0
	sp := r.space.Load()
	in.proofMu.Lock()
	in.wireMu.Lock()
	sp.mu.Lock()
	env := in.env(sp, now)
	if canary != nil {
		// a write answered after this informer delivered it
		if sent := canary.proof(in); !sent.IsZero() {
			in.proof.Canary(sent, env)
		}
	}
	var passed uint64 // the highest RV of another object the store reached
	for i, d := range ds {
		stored := now
		if polled != nil {
			if before, ok := polled(i); ok {
				stored = maxTime(before, d.At)
			}
		}
		o := delivery{storeLagSeconds: max(0, stored.Sub(d.At).Seconds())}
		if d.List {
			in.proof.ApplyList(d.ListRV, d.ListBegan, d.Consistent, env)
			if canary != nil {
				if sent, ok := canary.covered(in, d.ListRV, 0, now); ok {
					in.proof.Canary(sent, env)
				}
			}
		}
		switch d.Kind {
		case proof.Event:
			if d.RV == 0 {
				break // one event of a batch: its RV is not known
			}
			in.proof.ApplyEvent(d.RV, env)
			o.lag, o.bounded, o.ok = proof.DeliveryLag(sp.core, d.RV, now, r.interval)
			o.rv = d.RV
			if !d.Canary {
				passed = max(passed, d.RV)
			}
			if d.Canary && canary != nil {
				if sent, ok := canary.delivered(in, d.RV, d.Stamp, now); ok {
					in.proof.Canary(sent, env)
				}
			}
		case proof.Bookmark:
			in.proof.ApplyBookmark(d.RV, d.At, env)
			if !d.Canary {
				passed = max(passed, d.RV)
			}
			if d.Canary && canary != nil { // a batch whose canary event came before its last bookmark
				if sent, ok := canary.covered(in, d.RV, d.Stamp, now); ok {
					in.proof.Canary(sent, env)
				}
			}
		}
		obs[n] = o
		n++
	}
	if canary != nil && passed != 0 {
		if sent, ok := canary.passed(in, passed); ok {
			in.proof.Canary(sent, env)
		}
	}
	sp.mu.Unlock()
	in.wireMu.Unlock()
	if r.recordDeliveries.Load() {
		if in.deliveries == nil {
			in.deliveries = newDeliveries()
		}
		for i, d := range ds {
			if d.Kind == proof.Event && d.RV != 0 && d.Deltas == 1 {
				in.deliveries.add(d.Key, obs[i].rv, now)
			}
		}
	}
	in.proofMu.Unlock()
	if sibs := r.siblings(); sibs != nil {
		in.owe(sibs, ds, now)
	}
	for _, o := range obs[:n] {
		r.storeLag.Observe(o.storeLagSeconds)
		switch {
		case o.rv == 0 || !o.ok:
		case o.bounded:
			r.deliveryLag.Observe(o.lag.Seconds())
		default:
			r.unbounded.Inc()
		}
	}
}
