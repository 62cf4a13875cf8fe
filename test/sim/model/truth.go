package model

import (
	"hash/fnv"
	"maps"
	"strings"
	"time"
)

// View is what one client's informer of one resource holds, as far as the
// model can tell from what the client consumed: the latest write of each
// key its store reflects (from the list it last replaced its store with and
// the events since), the resource version of what it consumed last, and
// when. The model cannot see inside the client; the simulation reads the
// view once every goroutine of the client has settled (synctest.Wait), when
// everything consumed has reached the store.
type View struct {
	Conn, Resource string
	// Scope is what the view's informer lists and watches: a namespaced
	// or label-selected informer's store holds only those objects.
	Scope Scope
	// Store holds, by key, the latest write the client's store reflects
	// (a delete too); a key it never saw is absent.
	Store map[string]*Write
	// RV is the revision of the last event, bookmark or list consumed.
	RV uint64
	// Listed is whether a list (or watch-list) completed; ListedAt, when
	// the latest did, and ListTaken, when its snapshot was taken (its
	// first page was served, or its watch opened): a list begun before a
	// restore holds the old history up to its RV, however late it ends.
	Listed              bool
	ListedAt, ListTaken time.Time
	// ListInLoss and ListTainted say whether, when the latest list
	// completed, some watch cache of its etcd served a history etcd lost
	// (CachesLost) or held objects of one (CachesTainted): the list may
	// have come from it.
	ListInLoss, ListTainted bool
	// Last is when the client last consumed an event, a bookmark or a
	// list; LastBookmark, a bookmark.
	Last, LastBookmark time.Time
	// Events are the revisions of the watch events it consumed, in order.
	Events []uint64
}

type viewKey struct{ conn, res string }

// View returns the view of the informer of resource res on the
// connection of host (nil before it listed anything).
func (tx *Tx) View(host, res string) *View { return tx.c.views[viewKey{host, res}] }

func (c *Cluster) viewLocked(host, res string) *View {
	k := viewKey{host, res}
	v := c.views[k]
	if v == nil {
		v = &View{Conn: host, Resource: res, Store: map[string]*Write{}}
		if c.views == nil {
			c.views = map[viewKey]*View{}
		}
		c.views[k] = v
	}
	return v
}

// effect is what consuming a frame or a response does to a view.
type effect func(c *Cluster, t time.Time)

func eventEffect(host string, w *Write) effect {
	return func(c *Cluster, t time.Time) {
		v := c.viewLocked(host, w.Resource)
		v.Store[w.Key] = w
		v.RV, v.Last = w.Rev, t
		v.Events = append(v.Events, w.Rev)
	}
}

func bookmarkEffect(host, res string, rev uint64) effect {
	return func(c *Cluster, t time.Time) {
		v := c.viewLocked(host, res)
		v.RV, v.Last, v.LastBookmark = max(v.RV, rev), t, t
	}
}

// listEffect replaces the view's store with a snapshot taken at taken (a
// list's last page, a watch-list's initial-events-end bookmark).
func listEffect(host, res string, snapshot map[string]*Write, rev uint64, taken time.Time) effect {
	return func(c *Cluster, t time.Time) {
		v := c.viewLocked(host, res)
		v.Store, v.RV, v.Last, v.Listed, v.ListedAt, v.ListTaken = snapshot, rev, t, true, t, taken
		if r := c.resources[res]; r != nil {
			tx := &Tx{c: c}
			v.ListInLoss, v.ListTainted = tx.CachesLost(r.etcd.name), tx.CachesTainted(r.etcd.name)
		}
	}
}

// snapshot returns the key → last write map a list from last tells in
// scope.
func snapshot(last map[string]*Write, scope Scope) map[string]*Write {
	if scope == (Scope{}) {
		return maps.Clone(last)
	}
	out := map[string]*Write{}
	for k, w := range last {
		if scope.Holds(w.Obj.Key()) {
			out[k] = w
		}
	}
	return out
}

// Scope is what an informer's list and watch select: one namespace ("":
// all), a label selector ("": every object; ShardLabel=a or
// ShardLabel=b: the half of the objects the model labels so, by key) and
// a field selector ("": every object; metadata.name=NAME: the objects of
// that name, in every namespace the scope holds).
type Scope struct {
	Namespace, Selector, Field string
}

// ShardLabel is the label the model gives every object: "a" or "b", by its
// key (Shard).
const ShardLabel = "shard"

// Shard is the ShardLabel value of the object of key ("namespace/name").
func Shard(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	if h.Sum32()%2 == 0 {
		return "a"
	}
	return "b"
}

// Holds reports whether the scope holds the object of key.
func (s Scope) Holds(key string) bool {
	if s.Namespace != "" && !strings.HasPrefix(key, s.Namespace+"/") {
		return false
	}
	if s.Field != "" && "metadata.name="+key[strings.LastIndexByte(key, '/')+1:] != s.Field {
		return false
	}
	return s.Selector == "" || s.Selector == ShardLabel+"="+Shard(key)
}

// validSelector reports whether the model serves the label selector sel:
// none, or one of ShardLabel's two values.
func validSelector(sel string) bool {
	return sel == "" || sel == ShardLabel+"=a" || sel == ShardLabel+"=b"
}

// nameField is the one field selector the model serves (every API server
// serves it for every resource).
const nameField = "metadata.name="

// validField reports whether the model serves the field selector sel:
// none, or metadata.name=NAME.
func validField(sel string) bool {
	return sel == "" || strings.HasPrefix(sel, nameField) && len(sel) > len(nameField) && !strings.ContainsAny(sel, ",!")
}

// Fresh returns the newest instant by which the view held every write of
// its resource committed, in the history that etcd has now: the commit
// time of the oldest change the view misses (a write not lost, or a
// restore's revert of a key it holds a lost write of), or t when it misses
// none. missing counts the changes it misses; revert is whether the
// oldest of them is a restore's (a write no client could have seen yet
// has taken the key back).
func (tx *Tx) Fresh(v *View, t time.Time) (fresh time.Time, missing int, revert bool) {
	r := tx.c.resources[v.Resource]
	fresh = t
	if r == nil {
		return fresh, 0, false
	}
	for key, log := range r.keys {
		if !v.scopes(key) {
			continue
		}
		held := v.Store[key]
		for _, e := range log[position(log, held, t):] {
			switch {
			case e.At.After(t):
			case e.W != nil && e.W.Lost:
				continue // undone by a later revert
			case e.Revert && e.Target == held:
				continue // back to what the view holds
			default:
				if e.At.Before(fresh) {
					fresh, revert = e.At, e.Revert
				}
				missing++
			}
		}
	}
	return fresh, missing, revert
}

// scopes reports whether the view's scope holds key ("namespace/name").
func (v *View) scopes(key string) bool { return v.Scope.Holds(key) }

// position returns the index after the latest entry of log (by t) that
// left the key at held: its write, or a restore's revert to it (a revert
// supersedes what came before it, reverts of an earlier restore included);
// held nil is the key before its creation, left so by a revert to before
// it, or from the start (the view never saw the key).
func position(log []*entry, held *Write, t time.Time) int {
	for i := len(log) - 1; i >= 0; i-- {
		e := log[i]
		if held != nil && e.W == held || e.Revert && e.Target == held && !e.At.After(t) {
			return i + 1
		}
	}
	return 0
}

// Stuck reports whether the watch cache behind the connection of host for
// res stopped following etcd (a stuck cache, or any cache of a server cut
// off etcd: it misses whatever is written next).
func (tx *Tx) Stuck(host, res string) bool {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil || cn.server == nil {
		return false
	}
	wc := cn.server.caches[res]
	return wc != nil && wc.halted()
}

// Following reports whether the watch cache serving the informer of res
// on the connection of host follows etcd without delay: not stuck, not of
// a lost history, its server not cut off etcd, and nothing slows the
// connection or its server.
func (tx *Tx) Following(host, res string) bool {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil || cn.server == nil || cn.h.latency > 0 || cn.server.latency > 0 {
		return false
	}
	wc := cn.server.caches[res]
	return wc != nil && !wc.halted() && wc.pos <= wc.res.etcd.rev
}

// Live reports whether the informer of res on the connection of host has a
// watch open on a server that is up, over a connection that is not
// frozen, from a revision its watch cache has reached, and whether that
// watch gets bookmarks: it asked for them, its resource has them, and its
// watch cache has moved past the revision the watch started from
// (kube-apiserver's cacheWatcher sends no periodic bookmark at or below
// it; see Waiting).
func (tx *Tx) Live(host, res string) (live, bookmarks bool) {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil || cn.h.frozen || cn.server == nil || !cn.server.up {
		return false, false
	}
	wc := cn.server.caches[res]
	if wc == nil {
		return false, false
	}
	for _, wt := range wc.watchers {
		if wt.conn == cn && !wt.done {
			if wt.start > wc.rv {
				// resumed from a revision the cache has not reached (a lost
				// history's): it delivers nothing until the cache passes it
				return false, false
			}
			return true, wt.bookmarks && !wc.res.NoBookmarks && wc.dispatched > wt.start
		}
	}
	return false, false
}

// ResumedAbove reports whether the informer of res on the connection of
// host has a watch open, on a server that is up, over a connection that
// is not frozen, from a revision its watch cache has not reached (a lost
// history's, after a restore): the server sends it nothing, not even a
// bookmark, until its cache passes that revision, and ends each session
// on time, as it does a healthy watch of a cache that does not move.
func (tx *Tx) ResumedAbove(host, res string) bool {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil || cn.h.frozen || cn.server == nil || !cn.server.up {
		return false
	}
	wc := cn.server.caches[res]
	if wc == nil {
		return false
	}
	for _, wt := range wc.watchers {
		if wt.conn == cn && !wt.done {
			return wt.start > wc.rv
		}
	}
	return false
}

// Waiting reports whether the informer of res on the connection of host
// has a live watch (see Live) that its server sends nothing, not even a
// bookmark, until its watch cache moves past the revision the watch
// started from: a watch opened at a quiet cache's revision hears nothing
// until a write to the resource, or a progress notification after writes
// elsewhere in its etcd (or a consistent read asking for one), moves the
// cache. A client cannot tell such a watch from a stalled one.
func (tx *Tx) Waiting(host, res string) bool {
	cn := tx.c.watchConnLocked(host, res)
	if live, _ := tx.Live(host, res); !live {
		return false
	}
	wc := cn.server.caches[res]
	for _, wt := range wc.watchers {
		if wt.conn == cn && !wt.done {
			return wt.bookmarks && !wc.res.NoBookmarks && wc.dispatched <= wt.start
		}
	}
	return false
}

// StoreView returns the view of an informer whose store the simulation
// can read (one of PartialObjectMetadata, as a controller's cache holds):
// held maps each key it holds to the resource version it holds it at. A
// key it lacks is taken as holding the latest entry that left it absent (a
// store without a deleted object is right about it). scope scopes it as the
// informer's list and watch are.
func (tx *Tx) StoreView(res string, scope Scope, held map[string]string) *View {
	r := tx.c.resources[res]
	v := &View{Resource: res, Scope: scope, Store: map[string]*Write{}}
	if r == nil {
		return v
	}
	for key, log := range r.keys {
		rvs, ok := held[key]
		if !ok {
			// absent as of the latest entry that left the key absent: a
			// deletion (one a restore undid too: the store may have
			// applied it), or a restore's revert to a deletion or to
			// before the key was created (held nil: position finds it; a
			// store that relisted after a restore to before the key's
			// creation lacks nothing, simulation seed 1001680)
			for i := len(log) - 1; i >= 0; i-- {
				e := log[i]
				if e.W != nil && e.W.Type == Deleted {
					v.Store[key] = e.W
					break
				}
				if e.Revert && (e.Target == nil || e.Target.Type == Deleted) {
					if e.Target != nil {
						v.Store[key] = e.Target
					}
					break
				}
			}
			continue
		}
		rev, _ := r.parseRV(rvs)
		for i := len(log) - 1; i >= 0; i-- {
			if w := log[i].W; w != nil && w.Rev == rev {
				v.Store[key] = w
				break
			}
		}
	}
	return v
}

// LostHistory reports whether the watch cache behind the connection of host
// for res holds a history etcd lost: it was restored from a backup and the
// cache, not restarted, is past etcd's revision.
func (tx *Tx) LostHistory(host, res string) bool {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil || cn.server == nil {
		return false
	}
	wc := cn.server.caches[res]
	return wc != nil && wc.pos > wc.res.etcd.rev
}

// WatchOpened returns when the live watch of the informer of res on the
// connection of host opened (zero: none is live).
func (tx *Tx) WatchOpened(host, res string) time.Time {
	if live, _ := tx.Live(host, res); !live {
		return time.Time{}
	}
	cn := tx.c.watchConnLocked(host, res)
	for _, wt := range cn.server.caches[res].watchers {
		if wt.conn == cn && !wt.done {
			return wt.opened
		}
	}
	return time.Time{}
}

// Disrupted returns when the path of the informer of res on the connection
// of host was last disrupted: its connection frozen, thawed, dropped or
// slowed, its server stopped, started or slowed, its watch cache stuck or
// caught up (zero: never).
func (tx *Tx) Disrupted(host, res string) time.Time {
	cn := tx.c.watchConnLocked(host, res)
	if cn == nil {
		return time.Time{}
	}
	t := cn.disrupted
	if s := cn.server; s != nil {
		if s.disrupted.After(t) {
			t = s.disrupted
		}
		if wc := s.caches[res]; wc != nil && wc.disrupted.After(t) {
			t = wc.disrupted
		}
	}
	return t
}

// CachesTainted reports whether some watch cache, of any API server, of a
// resource stored in etcd name holds objects of a history etcd lost: it
// ran through a restore (see CachesLost) and was not recreated since, even
// if it follows etcd again. A list from it holds them; nothing in its RVs
// tells.
func (tx *Tx) CachesTainted(name string) bool {
	for _, s := range tx.c.servers {
		for _, wc := range s.caches {
			if wc.res.etcd.name == name && wc.tainted {
				return true
			}
		}
	}
	return false
}

// CachesLost reports whether some watch cache, of any API server, of a
// resource stored in etcd name holds a history etcd lost (a restore the
// API server has not seen): reads answered from it come from that history.
func (tx *Tx) CachesLost(name string) bool {
	for _, s := range tx.c.servers {
		for _, wc := range s.caches {
			if wc.res.etcd.name == name && wc.pos > wc.res.etcd.rev {
				return true
			}
		}
	}
	return false
}
