package proof

import "testing"

func TestQueuePops(t *testing.T) {
	var q Queue
	var out []Applied
	a, b := uint64(0xa), uint64(0xb)
	q.Push(Delta{RV: 10, Key: a, Kind: Event})
	q.Push(Delta{RV: 11, Kind: Bookmark})
	q.Push(Delta{RV: 12, Key: b, Kind: Event})
	q.Push(Delta{RV: 13, Kind: Bookmark})
	if out = q.PopKey(b, out[:0]); len(out) != 0 {
		t.Fatalf("a notification for b popped %d entries while a's is due first", len(out))
	}
	if out = q.PopKey(a, out[:0]); len(out) != 1 || out[0].RV != 10 {
		t.Fatalf("a's notification popped %+v; want the event at 10", out)
	}
	if out = q.PopKey(b, out[:0]); len(out) != 2 || out[1].RV != 12 {
		t.Fatalf("b's notification popped %+v; want the bookmark before it and b's", out)
	}
	if out = q.PopRV(12, out[:0]); len(out) != 0 {
		t.Fatalf("store RV 12 popped the bookmark at 13")
	}
	if out = q.PopRV(13, out[:0]); len(out) != 1 || q.Depth() != 0 {
		t.Fatalf("store RV 13 popped %d, depth %d; want 1, 0", len(out), q.Depth())
	}
	// overflow: 100 deltas in 32 entries, merged pairwise at an even
	// resolution; the store inside the batches over-counts by at most one
	for rv := uint64(101); rv <= 200; rv++ {
		q.Push(Delta{RV: rv, Key: rv, Kind: Event})
	}
	if q.Depth() != 100 || q.n > QueueCap {
		t.Fatalf("100 deltas: depth %d in %d entries", q.Depth(), q.n)
	}
	popped := 0
	for _, d := range q.PopRV(150, out[:0]) {
		popped += d.Deltas
		if d.RV > 150 {
			t.Fatalf("popped an entry up to RV %d with the store at 150", d.RV)
		}
	}
	if popped+q.Depth() != 100 || q.Depth() < 50 || q.Depth() > 50+8 {
		t.Errorf("store at RV 150 of 101…200: depth %d (popped %d); want 50 plus at most one entry", q.Depth(), popped)
	}
	if !q.NeedsStoreRV() {
		t.Error("a batch of events of several keys does not need the store's RV")
	}
}

// #26 row 8: one hot object's burst merged into batches drains one event
// per notification without an RV, never a whole batch: the depth never
// falls below what waits.
func TestQueueHotObjectDrainsOneEventPerNotification(t *testing.T) {
	var q Queue
	hot := uint64(0x407)
	for rv := uint64(1); rv <= 2000; rv++ {
		q.Push(Delta{RV: rv, Key: hot, Kind: Event})
	}
	for applied := 1; applied <= 40; applied++ {
		q.PopKey(hot, nil)
		if want := 2000 - applied; q.Depth() != want {
			t.Fatalf("after %d notifications of the hot object: depth %d; want %d", applied, q.Depth(), want)
		}
	}
	if q.NeedsStoreRV() {
		t.Error("a batch of one key's events waits for the store's RV, not its notifications")
	}
}
