package probe

import (
	"sync"
	"time"
)

// owing is what the informers of one resource owe one another: a change
// that one of them delivered, of an object another holds, is a change the
// other must deliver too. A watch sends every change of every object in
// its scope (an object that leaves a label-selected scope as a deletion),
// so an informer that holds the object and has not delivered the change
// (nor anything past it) by overdueAfter after its sibling did is behind
// at least that change: its watch cache, on another API server, stopped
// following etcd while its bookmarks still come (#39, premise 3: a fact
// about one informer of a resource is not a fact about the resource).
//
// An informer holds an object once it delivered a change of it that was
// not a deletion (its list's objects are not recorded: it is held to
// objects it showed to be in its scope), until it delivers its deletion or
// lists again. Only resources with several informers keep any of this.
//
// Any change a sibling delivered is owed as a bookmark by an informer whose
// watch has bookmarks: a watch cache's periodic bookmark carries the
// revision its dispatcher last processed, whatever the watch's namespace
// or selector, so an informer whose cache follows etcd reaches the change
// by the first bookmark due after it (proof.Watch.Unmet), be it of an
// object it holds, one its scope takes in that it never held, or one
// outside its scope. One whose bookmarks stay below is behind its
// resource, whatever its scope holds (simulation seed 1024237: a
// label-selected informer on a stuck cache, short of new objects of its
// shard, read RV lag 0).
type owing struct {
	mu sync.Mutex
	by map[*informer]*debts
}

// debts is one informer's side of owing.
type debts struct {
	held map[uint64]uint64 // the objects it holds (key hash) and the RV it delivered each at
	owed []owedChange      // changes it owes as events, oldest due first
	// marks are the changes it owes as bookmarks, by when a sibling
	// delivered them, oldest first; behind, the highest of them a
	// bookmark should have carried and did not (it stays owed when the
	// watch reopens: a stuck cache sends a watch from its own RV no
	// bookmark at all)
	marks    []owedChange
	behind   uint64
	behindAt time.Time // when a sibling delivered the latest change behind holds
}

// owedChange is the highest RV of the changes owed that fell due by due
// (or, in marks, that a sibling delivered by due), the first of them by
// first.
type owedChange struct {
	rv         uint64
	due, first time.Time
}

const (
	// overdueAfter is how long after a write an informer that should
	// have delivered it is behind: the canary's default deadline.
	overdueAfter = 60 * time.Second
	// maxHeld bounds the objects recorded per informer: once it is
	// reached, an informer is held to the objects recorded so far.
	maxHeld = 4096
	// maxOwed bounds the changes owed per informer; owed changes fall due
	// at least a second apart (later ones within a second join the last).
	maxOwed = 128
)

// change is one watch event an informer applied: the key hash of its
// object, its RV, and whether it deleted the object.
type change struct {
	key, rv uint64
	deleted bool
}

// relist is a list an informer's store replaced its content with: at rv,
// begun at began, consistent when it read at RV "" (etcd's current
// state, or a watch cache that caught up with it).
type relist struct {
	rv         uint64
	began      time.Time
	consistent bool
}

// applied records that in's store applied changes (and, when l.rv is not
// 0, replaced its content with list l first), at now: what in holds, what
// it no longer owes, and what its siblings owe. siblings are the
// resource's informers; one that stopped owes nothing any more.
func (o *owing) applied(in *informer, siblings []*informer, l relist, changes []change, now time.Time) {
	if len(siblings) < 2 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[*informer]*debts{}
	}
	mine := o.debtsOf(in)
	// the siblings that may owe: not in, not stopped (one that stopped
	// owes nothing any more), once per batch, not per change
	var owers [8]*debts
	others := owers[:0]
	for _, s := range siblings {
		if s == in {
			continue
		}
		if stopped := s.hook().stopped; stopped != nil && stopped() {
			delete(o.by, s)
			continue
		}
		if d := o.by[s]; d != nil {
			others = append(others, d)
		}
	}
	if l.rv != 0 {
		clear(mine.held)
		mine.paid(l.rv)
		if l.consistent {
			// a consistent list begun after a sibling delivered a change
			// holds it or what came after it, whatever the RVs say: one
			// above the list's was of a history etcd lost since (a
			// restore; simulation seed 1301317: a change delivered just
			// before a restore stayed owed, at its lost RV, by a store
			// listed in the new history, RV lag 524-620 while it missed
			// nothing)
			mine.owed = unpaidSince(mine.owed, l.began, overdueAfter)
			mine.marks = unpaidSince(mine.marks, l.began, 0)
			if mine.behindAt.Before(l.began) {
				mine.behind = 0
			}
		}
	}
	var top uint64
	for _, c := range changes {
		top = max(top, c.rv)
		mine.paid(c.rv)
		if c.deleted {
			delete(mine.held, c.key)
		} else if _, ok := mine.held[c.key]; ok || len(mine.held) < maxHeld {
			mine.held[c.key] = c.rv
		}
		for _, d := range others {
			if at, ok := d.held[c.key]; ok && at < c.rv {
				d.owed = owe(d.owed, c.rv, now.Add(overdueAfter))
			}
		}
	}
	if top != 0 {
		for _, d := range others {
			d.marks = owe(d.marks, top, now)
		}
	}
}

func (o *owing) debtsOf(in *informer) *debts {
	d := o.by[in]
	if d == nil {
		d = &debts{held: map[uint64]uint64{}}
		o.by[in] = d
	}
	return d
}

// overdue returns the highest RV of a change in owes that fell due by now
// and is above rv, the RV its store holds (0: none): as an event, or as a
// bookmark, when unmet reports that one after the instant its sibling
// delivered it should have reached it (nil: bookmarks owe nothing).
func (o *owing) overdue(in *informer, rv uint64, now time.Time, unmet func(at time.Time) bool) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.by[in]
	if d == nil {
		return 0
	}
	d.paid(rv)
	var owed uint64
	for _, c := range d.owed {
		if c.due.After(now) {
			break
		}
		owed = max(owed, c.rv)
	}
	if unmet != nil {
		i := 0
		for _, c := range d.marks {
			if unmet(c.due) {
				if c.rv > d.behind {
					d.behind, d.behindAt = c.rv, c.due
				}
				continue
			}
			d.marks[i] = c
			i++
		}
		d.marks = d.marks[:i]
	}
	return max(owed, d.behind)
}

// owe adds a change at rv owed by due to cs (due no earlier than any in
// cs): changes within a second of the first of an entry join it, at the
// later due, and cs holds maxOwed at most. An entry spans a second at
// most: joined to the latest change, a steady stream of changes less than
// a second apart moved its due on forever, and nothing fell due
// (simulation seed 1403223).
func owe(cs []owedChange, rv uint64, due time.Time) []owedChange {
	if n := len(cs); n > 0 && (due.Sub(cs[n-1].first) < time.Second || n == maxOwed) {
		cs[n-1].rv, cs[n-1].due = max(cs[n-1].rv, rv), due
		return cs
	}
	return append(cs, owedChange{rv: rv, due: due, first: due})
}

// paid drops what the store's reaching rv paid: every change at or below
// it (a watch delivers an informer's changes in RV order, and a list at
// rv holds them all).
func (d *debts) paid(rv uint64) {
	d.owed, d.marks = unpaid(d.owed, rv), unpaid(d.marks, rv)
	if d.behind <= rv {
		d.behind = 0
	}
}

// unpaidSince returns cs without the changes a sibling delivered before
// began (each due lead after its delivery), in place.
func unpaidSince(cs []owedChange, began time.Time, lead time.Duration) []owedChange {
	i := 0
	for _, c := range cs {
		if !c.due.Add(-lead).Before(began) {
			cs[i] = c
			i++
		}
	}
	return cs[:i]
}

// unpaid returns cs without the changes at or below rv, in place.
func unpaid(cs []owedChange, rv uint64) []owedChange {
	i := 0
	for _, c := range cs {
		if c.rv > rv {
			cs[i] = c
			i++
		}
	}
	return cs[:i]
}
