package model

import (
	"context"
	"maps"
	"slices"
	"time"
)

// APIServer is one kube-apiserver: a watch cache per resource, fed by its
// etcd, serving Lists and Watches.
type APIServer struct {
	c      *Cluster
	ID     int
	up     bool
	caches map[string]*watchCache
	// latency is added to every response and watch event it sends.
	latency time.Duration
	// disrupted is when it last stopped, started, changed its latency or
	// was cut off etcd or released
	disrupted time.Time
	// cut: it lost etcd (CutOff): every watch cache of it stands still,
	// and what needs etcd hangs; released is closed (and replaced) when
	// that ends, or the server stops, to wake the requests that wait
	cut      bool
	released chan struct{}
}

// cachesInOrder returns the server's watch caches by resource name: what
// they do to their watchers wakes the clients' goroutines, and the order
// they wake in must not depend on map iteration, or a seed would not
// replay.
func (s *APIServer) cachesInOrder() []*watchCache {
	out := make([]*watchCache, 0, len(s.caches))
	for _, name := range slices.Sorted(maps.Keys(s.caches)) {
		out = append(out, s.caches[name])
	}
	return out
}

// Up reports whether the server serves.
func (tx *Tx) Up(server int) bool { return tx.c.servers[server].up }

// Serving reports whether some API server serves writes: writers write
// through one that is up and reaches etcd, so while none does nothing is
// written.
func (tx *Tx) Serving() bool {
	for _, s := range tx.c.servers {
		if s.up && !s.cut {
			return true
		}
	}
	return false
}

// Stop takes API server i down: its connections break (open watches end
// with an error), new connections go to another server, and its watch
// caches are gone.
func (tx *Tx) Stop(i int) {
	s := tx.c.servers[i]
	if !s.up {
		return
	}
	s.up = false
	t := now()
	s.disrupted = t
	s.wakeLocked()
	for _, wc := range s.cachesInOrder() {
		wc.closeAll(t, errConnReset)
	}
	s.caches = map[string]*watchCache{}
	for _, host := range slices.Sorted(maps.Keys(tx.c.hosts)) {
		for _, cn := range slices.Clone(tx.c.hosts[host].conns) {
			if cn.server == s {
				// its next requests reach another server (HTTP/1.1: it
				// closed; the next request dials a new one)
				cn.server, cn.disrupted, cn.h.disrupted = nil, t, t
				if cn.h.pooled {
					tx.c.closeLocked(cn)
				}
			}
		}
	}
}

// Start brings API server i up with new watch caches, listed from etcd at
// its current revision (as a restarted kube-apiserver's are).
func (tx *Tx) Start(i int) {
	s := tx.c.servers[i]
	if s.up {
		return
	}
	s.up = true
	t := now()
	s.disrupted = t
	if s.cut {
		return // it cannot list etcd: its caches start at the release
	}
	s.fillCachesLocked(t)
}

// fillCachesLocked gives the server a new watch cache of every served
// resource it has none of, listed from etcd at its current revision.
func (s *APIServer) fillCachesLocked(t time.Time) {
	for _, name := range slices.Sorted(maps.Keys(s.c.resources)) {
		if r := s.c.resources[name]; r.exists && s.caches[name] == nil {
			s.caches[name] = newWatchCache(s, r, t)
		}
	}
}

// CutOff cuts API server i off etcd (cut true) or gives etcd back (false),
// as a network partition between the two does (docs/testing.md,
// TestHAServerLosesEtcd, measured on kube-apiserver 1.37.2 and 1.34.4).
// While cut, every watch cache of it stands still at its resource version
// (stuck, as StickCache makes one, bookmarks at that version included);
// what it answers from its caches it answers at once (a List or a watch
// at resourceVersion 0, a watch from a revision its cache holds or has not
// reached); a List from a newer revision waits its fresh wait and fails
// with "too large resource version"; what needs etcd itself hangs: a
// consistent List, a Get, a write fail at the request timeout (60s, 504),
// and a watch with the resource version unset, a watch-list, until the
// watch's own timeout, unless etcd comes back first. At the release every
// cache catches up with etcd at once (the real ones within half a second),
// but one StickCache keeps stuck; a server that started while cut gets its
// caches then.
func (tx *Tx) CutOff(i int, cut bool) {
	s := tx.c.servers[i]
	if s.cut == cut {
		return
	}
	t := now()
	s.cut, s.disrupted = cut, t
	if cut {
		return
	}
	s.wakeLocked()
	if !s.up {
		return
	}
	for _, wc := range s.cachesInOrder() {
		if !wc.stuck {
			wc.catchUp(t)
		}
	}
	s.fillCachesLocked(t)
}

// CutOffFromEtcd reports whether API server i is cut off etcd (CutOff).
func (tx *Tx) CutOffFromEtcd(i int) bool { return tx.c.servers[i].cut }

// wakeLocked wakes the requests waiting for the server to reach etcd.
func (s *APIServer) wakeLocked() {
	if s.released != nil {
		close(s.released)
		s.released = nil
	}
}

// awaitEtcdLocked holds a request that needs etcd while its server is cut
// off it: until the release (true), the server stops, the request's
// timeout passes or its client gives up (false). It unlocks the model
// while it waits and returns with it locked.
func (c *Cluster) awaitEtcdLocked(ctx context.Context, s *APIServer, timeout time.Duration) bool {
	deadline := now().Add(timeout)
	for s.cut && s.up {
		if ctx.Err() != nil || !now().Before(deadline) {
			return false
		}
		if s.released == nil {
			s.released = make(chan struct{})
		}
		released := s.released
		c.mu.Unlock()
		timer := time.NewTimer(deadline.Sub(now()))
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-released:
		}
		timer.Stop()
		// which came first is the model's to say (its scheduled work
		// runs in time order), not the select's
		c.mu.Lock()
		c.advanceLocked(now())
	}
	return s.up && ctx.Err() == nil
}

// SetServerLatency makes API server i answer, and deliver watch events,
// d late.
func (tx *Tx) SetServerLatency(i int, d time.Duration) {
	s := tx.c.servers[i]
	s.latency, s.disrupted = d, now()
}

// StickCache makes the watch cache of resource res on server i stop
// following etcd (stuck is true) or catch up again (false). A stuck cache
// still sends bookmarks, at its old resource version; consistent reads
// wait for it, then fall back to etcd.
//
// On a server cut off etcd (CutOff) a cache released from StickCache
// stays where it is until the server's release.
func (tx *Tx) StickCache(i int, res string, stuck bool) {
	wc := tx.c.servers[i].caches[res]
	if wc == nil || wc.stuck == stuck {
		return
	}
	wc.stuck, wc.disrupted = stuck, now()
	if !stuck && !wc.srv.cut {
		wc.catchUp(now())
	}
}

// Servers returns how many API servers the cluster runs.
func (tx *Tx) Servers() int { return len(tx.c.servers) }

// CacheRV returns the resource version of resource res's watch cache on
// server i (0 when it has none): what the server's
// apiserver_watch_cache_resource_version reports, set on events, progress
// notifications and lists.
func (tx *Tx) CacheRV(i int, res string) uint64 {
	if wc := tx.c.servers[i].caches[res]; wc != nil {
		return wc.rv
	}
	return 0
}

// watchCache is an API server's cache of one resource.
type watchCache struct {
	srv *APIServer
	res *Resource
	// rv is the revision it is known to hold everything up to (the
	// revision a consistent read waits for): its last event's, or a later
	// progress notification's; pos, the etcd revision whose events it has
	// processed; dispatched, the revision its dispatcher last processed
	// (the cacher's lastProcessedResourceVersion, which its periodic
	// bookmarks carry): an event's at once, a progress notification's up
	// to Config.DispatchLag later.
	rv, pos, dispatched uint64
	// floor: a watch from a revision below it gets 410 Expired (the
	// events after it are no longer kept).
	floor uint64
	// last is the latest write of each key it applied (a delete too): the
	// objects it holds, and what a list from it tells a client.
	last   map[string]*Write
	window []*Write
	// stuck: StickCache stopped it (its server cut off etcd stops it
	// too: halted)
	stuck bool
	// tainted: etcd was restored below its position while it ran; it
	// holds objects of the lost history (what etcd undid between the
	// backup and its position it never hears of) until it is recreated
	tainted   bool
	disrupted time.Time // when it last got stuck or caught up
	watchers  []*watcher
}

func newWatchCache(s *APIServer, r *Resource, t time.Time) *watchCache {
	return &watchCache{srv: s, res: r, rv: r.etcd.rev, pos: r.etcd.rev, dispatched: r.etcd.rev, floor: r.etcd.rev, last: r.lastWritesLocked()}
}

// minWindowEvents is how many events the cache keeps whatever their age
// (its smallest capacity).
const minWindowEvents = 100

// halted reports whether the cache stands still: stuck (StickCache), or
// its server cut off etcd (CutOff).
func (wc *watchCache) halted() bool { return wc.stuck || wc.srv.cut }

// event applies a write committed to the cache's etcd.
func (wc *watchCache) event(w *Write, t time.Time) {
	if wc.halted() || w.Rev <= wc.pos {
		return // stuck, or etcd's revision has not passed the cache's yet (a restore)
	}
	wc.apply(w, t)
}

func (wc *watchCache) apply(w *Write, t time.Time) {
	wc.pos, wc.rv, wc.dispatched = w.Rev, w.Rev, w.Rev
	wc.last[w.Key] = w
	wc.window = append(wc.window, w)
	cut := t.Add(-wc.srv.c.cfg.WatchCacheWindow)
	drop := 0
	for drop < len(wc.window)-minWindowEvents && wc.window[drop].At.Before(cut) {
		drop++
	}
	if drop > 0 {
		wc.floor = wc.window[drop-1].Rev
		wc.window = slices.Delete(wc.window, 0, drop)
	}
	for _, wt := range wc.watchers {
		wt.send(w, t)
	}
}

// progress handles a progress notification of etcd: nothing of this
// resource happened up to etcd's current revision.
func (wc *watchCache) progress(t time.Time) {
	e := wc.res.etcd
	if wc.halted() || e.rev <= wc.pos {
		return
	}
	wc.pos, wc.rv = e.rev, e.rev
	c := wc.srv.c
	if c.cfg.DispatchLag <= 0 {
		wc.dispatched = wc.rv
		return
	}
	rv := wc.rv
	c.scheduleLocked(t.Add(time.Duration(c.dispatch.Int64N(int64(c.cfg.DispatchLag)))), func(time.Time) {
		wc.dispatched = max(wc.dispatched, rv)
	})
}

// catchUp replays what a stuck cache missed, then takes etcd's revision.
func (wc *watchCache) catchUp(t time.Time) {
	e := wc.res.etcd
	for _, w := range e.history {
		if w.Rev > wc.pos && w.Resource == wc.res.Name {
			wc.apply(w, t)
		}
	}
	wc.progress(t)
}

// fresh reports whether the cache holds everything etcd committed, after
// asking etcd for a progress notification (as a consistent read does).
//
// The cacher asks only when it is behind etcd's revision, and it asks on
// the one etcd watch stream all of its server's caches share
// (SeparateCacheWatchRPC): every cache of that etcd on the server takes
// the notification. Seen on kube-apiserver v1.37.2 with etcd's
// progress-notify interval at 10 min: a watch of a quiet resource's
// (Secrets') got its first bookmark after consistent reads of another
// resource (ConfigMaps), none before.
func (wc *watchCache) fresh(t time.Time) bool {
	if wc.halted() {
		return wc.rv >= wc.res.etcd.rev
	}
	if wc.res.etcd.rev > wc.pos {
		for _, other := range wc.srv.cachesInOrder() {
			if other.res.etcd == wc.res.etcd {
				other.progress(t)
			}
		}
	}
	wc.progress(t)
	return true
}

func (wc *watchCache) closeAll(t time.Time, err error) {
	for _, wt := range slices.Clone(wc.watchers) {
		wt.end(t, err)
	}
}

// watcher is one watch served by a watch cache.
type watcher struct {
	wc     *watchCache
	conn   *conn
	stream *stream
	pos    uint64 // revision of the last event or bookmark sent
	// start is the revision it started from: the last it was sent before
	// it joined the cache's watchers (the resourceVersion it asked for, or
	// its initial state's). The cacher sends it bookmarks above start only.
	start     uint64
	bookmarks bool
	opened    time.Time // when the watch request arrived
	deadline  time.Time
	next      *action // the next bookmark
	deadlineA *action
	meta      bool // PartialObjectMetadata (metadata client) or full objects
	scope     Scope
	done      bool
}

func (wt *watcher) send(w *Write, t time.Time) {
	if wt.done || w.Rev <= wt.pos || !wt.scope.Holds(w.Obj.Key()) {
		return
	}
	wt.pos = w.Rev
	obj := w.Obj
	wt.stream.push(encodeEvent(w.Type, wt.wc.res, obj, wt.meta, ""), t.Add(wt.delay()), eventEffect(wt.conn.host, w))
}

func (wt *watcher) delay() time.Duration { return wt.wc.srv.latency + wt.conn.h.latency }

// bookmark sends a bookmark at the cache's revision; initial, when not
// nil, is the snapshot of a watch-list's initial events, which the
// initial-events-end bookmark completes.
//
// A periodic bookmark carries the revision the cache's dispatcher last
// processed (which trails a progress notification by up to
// Config.DispatchLag) and is sent only when that is above the revision the
// watch started from (kube-apiserver's
// cacheWatcher drops the others): a watch opened at the cache's current
// revision gets none until the cache moves (an event, or a progress
// notification after other writes to its etcd), and a watch from a
// revision the cache has not reached gets none until it does.
func (wt *watcher) bookmark(t time.Time, initial map[string]*Write) {
	rv := wt.wc.dispatched
	if initial != nil {
		rv = wt.wc.rv // a watch-list's initial state is the cache's
	}
	if initial == nil && rv <= wt.start {
		return
	}
	wt.pos = max(wt.pos, rv)
	e := bookmarkEffect(wt.conn.host, wt.wc.res.Name, rv)
	if initial != nil {
		e = listEffect(wt.conn.host, wt.wc.res.Name, initial, rv, wt.opened)
	}
	wt.stream.push(encodeBookmark(wt.wc.res, rv, wt.meta, initial != nil), t.Add(wt.delay()), e)
}

// scheduleBookmark plans the next bookmark: a period after from, or
// 2s before the watch's deadline if that comes first, up to the jitter late.
func (wt *watcher) scheduleBookmark(from time.Time) {
	c := wt.wc.srv.c
	if !wt.bookmarks || wt.wc.res.NoBookmarks {
		return
	}
	at := from.Add(c.cfg.BookmarkPeriod)
	if !wt.deadline.IsZero() {
		if pre := wt.deadline.Add(-2 * time.Second); pre.Before(at) {
			if pre.Before(from) {
				return
			}
			at = pre
		}
	}
	at = at.Add(time.Duration(c.rng.Int64N(int64(c.cfg.BookmarkJitter))))
	wt.next = c.scheduleLocked(at, func(t time.Time) {
		if wt.done {
			return
		}
		wt.bookmark(t, nil)
		wt.scheduleBookmark(t)
	})
}

// end stops the watch: its stream ends after what was sent (err nil: the
// server closed it, as at the watch's timeout) or breaks (err).
func (wt *watcher) end(t time.Time, err error) {
	if wt.done {
		return
	}
	wt.done = true
	c := wt.wc.srv.c
	c.cancelLocked(wt.next)
	c.cancelLocked(wt.deadlineA)
	wt.wc.watchers = slices.DeleteFunc(wt.wc.watchers, func(x *watcher) bool { return x == wt })
	if err != nil {
		wt.stream.fail(err)
		return
	}
	wt.stream.finish(t.Add(wt.delay()))
}
