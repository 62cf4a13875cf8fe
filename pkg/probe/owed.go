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
type owing struct {
	mu sync.Mutex
	by map[*informer]*debts
}

// debts is one informer's side of owing.
type debts struct {
	held map[uint64]uint64 // the objects it holds (key hash) and the RV it delivered each at
	owed []owedChange      // changes it owes, oldest due first
}

// owedChange is the highest RV of the changes owed that fell due by due.
type owedChange struct {
	rv  uint64
	due time.Time
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

// applied records that in's store applied changes (and, when listRV is
// not 0, replaced its content with a list at listRV first), at now: what
// in holds, what it no longer owes, and what its siblings owe. siblings
// are the resource's informers; one that stopped owes nothing any more.
func (o *owing) applied(in *informer, siblings []*informer, listRV uint64, changes []change, now time.Time) {
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
	if listRV != 0 {
		clear(mine.held)
		mine.paid(listRV)
	}
	for _, c := range changes {
		mine.paid(c.rv)
		if c.deleted {
			delete(mine.held, c.key)
		} else if _, ok := mine.held[c.key]; ok || len(mine.held) < maxHeld {
			mine.held[c.key] = c.rv
		}
		for _, d := range others {
			if at, ok := d.held[c.key]; ok && at < c.rv {
				d.owe(c.rv, now.Add(overdueAfter))
			}
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
// and is above rv, the RV its store holds (0: none).
func (o *owing) overdue(in *informer, rv uint64, now time.Time) uint64 {
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
	return owed
}

// owe records a change at rv owed by due.
func (d *debts) owe(rv uint64, due time.Time) {
	if n := len(d.owed); n > 0 && (due.Sub(d.owed[n-1].due) < time.Second || n == maxOwed) {
		d.owed[n-1].rv = max(d.owed[n-1].rv, rv)
		return
	}
	d.owed = append(d.owed, owedChange{rv: rv, due: due})
}

// paid drops what the store's reaching rv paid: every change at or below
// it (a watch delivers an informer's changes in RV order, and a list at
// rv holds them all).
func (d *debts) paid(rv uint64) {
	i := 0
	for _, c := range d.owed {
		if c.rv > rv {
			d.owed[i] = c
			i++
		}
	}
	d.owed = d.owed[:i]
}
