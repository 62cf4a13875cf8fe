package model

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"
)

// EtcdSpec configures one etcd keyspace.
type EtcdSpec struct {
	Name string
	// Revision is its revision at the start.
	Revision uint64
	// ProgressNotify is the interval of its watch progress notifications
	// (kubeadm: 5s; etcd's default: 10m); 0 sends none.
	ProgressNotify time.Duration
}

// etcd is one etcd keyspace: a revision shared by every resource stored in
// it, the current objects, and the writes of the current history.
type etcd struct {
	name     string
	rev      uint64
	epoch    int // restores so far
	objects  map[string]*Object
	history  []*Write // the writes of the current history, by revision
	progress time.Duration
	notify   *action
}

// AddEtcd adds an etcd keyspace (or replaces the progress interval of an
// existing one).
func (c *Cluster) AddEtcd(s EtcdSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.etcds[s.Name]
	if !ok {
		e = &etcd{name: s.Name, rev: s.Revision, objects: map[string]*Object{}}
		c.etcds[s.Name] = e
	}
	c.setProgressLocked(e, s.ProgressNotify)
}

// SetProgressNotify changes the progress-notify interval of etcd name.
func (tx *Tx) SetProgressNotify(name string, every time.Duration) {
	tx.c.setProgressLocked(tx.c.etcds[name], every)
}

func (c *Cluster) setProgressLocked(e *etcd, every time.Duration) {
	c.cancelLocked(e.notify)
	e.progress, e.notify = every, nil
	if every > 0 {
		c.scheduleProgressLocked(e, now())
	}
}

func (c *Cluster) scheduleProgressLocked(e *etcd, from time.Time) {
	e.notify = c.scheduleLocked(from.Add(e.progress), func(t time.Time) {
		for _, s := range c.servers {
			for _, wc := range s.cachesInOrder() {
				if wc.res.etcd == e {
					wc.progress(t)
				}
			}
		}
		c.scheduleProgressLocked(e, t)
	})
}

// Revision returns the current revision of etcd name.
func (tx *Tx) Revision(name string) uint64 { return tx.c.etcds[name].rev }

// Epoch returns how many times etcd name was restored.
func (tx *Tx) Epoch(name string) int { return tx.c.etcds[name].epoch }

// Object is what the model stores of an object.
type Object struct {
	Namespace, Name, UID string
	RV                   uint64 // its last modification's revision
	Generation           int64
	ObservedGeneration   int64
	HasObserved          bool
	Annotations          map[string]string
}

// Key returns "namespace/name" (or "name").
func (o *Object) Key() string { return objectKey(o.Namespace, o.Name) }

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func (o *Object) clone() *Object {
	c := *o
	c.Annotations = maps.Clone(o.Annotations)
	return &c
}

// Event types of writes and watch events.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
	Error    = "ERROR"
)

// Write is one committed write: the ground truth of what a cache must
// eventually hold.
type Write struct {
	Seq      int
	Resource string
	Etcd     string
	Epoch    int // of its etcd: a restore starts a new epoch
	Rev      uint64
	Type     string // Added, Modified or Deleted
	Key      string
	Obj      *Object // after the write; for a delete, the last state at Rev
	Prev     *Object // before it; nil for a create
	At       time.Time
	// Lost is set when a restore of its etcd undid it.
	Lost bool
}

// RVString is the resource version of the write as the API serves it.
func (w *Write) RVString(r *Resource) string { return r.rvString(w.Rev) }

// Create creates an object of resource res; it fails (returns nil) when the
// object exists or the resource does not.
func (tx *Tx) Create(res, namespace, name string, mutate func(*Object)) *Write {
	c := tx.c
	r := c.resources[res]
	if r == nil || !r.exists {
		return nil
	}
	key := objectKey(namespace, name)
	if _, ok := r.etcd.objects[r.storeKey(key)]; ok {
		return nil
	}
	o := &Object{Namespace: namespace, Name: name, UID: c.newUID(), Generation: 1}
	if mutate != nil {
		mutate(o)
	}
	return c.commitLocked(r, Added, o, nil)
}

// Update modifies an object of resource res with mutate; nil when it does
// not exist. An update that changes nothing is still a write (a new RV), as
// a PATCH that sets the same annotation value anew is.
func (tx *Tx) Update(res, namespace, name string, mutate func(*Object)) *Write {
	c := tx.c
	r := c.resources[res]
	if r == nil || !r.exists {
		return nil
	}
	old, ok := r.etcd.objects[r.storeKey(objectKey(namespace, name))]
	if !ok {
		return nil
	}
	o := old.clone()
	if mutate != nil {
		mutate(o)
	}
	return c.commitLocked(r, Modified, o, old)
}

// Delete deletes an object of resource res; nil when it does not exist.
func (tx *Tx) Delete(res, namespace, name string) *Write {
	c := tx.c
	r := c.resources[res]
	if r == nil || !r.exists {
		return nil
	}
	old, ok := r.etcd.objects[r.storeKey(objectKey(namespace, name))]
	if !ok {
		return nil
	}
	return c.commitLocked(r, Deleted, old.clone(), old)
}

// Get returns the current object, or nil.
func (tx *Tx) Get(res, namespace, name string) *Object {
	r := tx.c.resources[res]
	if r == nil || !r.exists {
		return nil
	}
	return r.etcd.objects[r.storeKey(objectKey(namespace, name))]
}

// Objects returns the current objects of resource res, by key.
func (tx *Tx) Objects(res string) []*Object {
	r := tx.c.resources[res]
	if r == nil || !r.exists {
		return nil
	}
	return r.objectsLocked()
}

// Others commits n writes to resources nobody watches in etcd name: its
// revision moves, no watch cache of a watched resource sees an event.
func (tx *Tx) Others(name string, n uint64) { tx.c.etcds[name].rev += n }

func (c *Cluster) commitLocked(r *Resource, typ string, o, prev *Object) *Write {
	e := r.etcd
	e.rev++
	o.RV = e.rev
	t := now()
	c.seq++
	w := &Write{Seq: c.seq, Resource: r.Name, Etcd: e.name, Epoch: e.epoch, Rev: e.rev, Type: typ, Key: o.Key(), Obj: o, Prev: prev, At: t}
	if typ == Deleted {
		delete(e.objects, r.storeKey(w.Key))
	} else {
		e.objects[r.storeKey(w.Key)] = o
	}
	e.history = append(e.history, w)
	r.writes = append(r.writes, w)
	r.logLocked(w.Key, &entry{At: t, W: w})
	for _, s := range c.servers {
		if wc := s.caches[r.Name]; wc != nil {
			wc.event(w, t)
		}
	}
	return w
}

// Restore restores etcd name from a backup taken at revision rev: every
// write after it is undone and marked lost, and the revision goes back to
// rev (the next write gets rev+1 again, in a new epoch). API servers are
// not told: their watch caches keep the lost history until they restart
// or etcd's revision passes theirs.
func (tx *Tx) Restore(name string, rev uint64) {
	e := tx.c.etcds[name]
	if rev >= e.rev {
		return
	}
	i := sort.Search(len(e.history), func(i int) bool { return e.history[i].Rev > rev })
	type touched struct {
		r   *Resource
		key string
	}
	reverted := map[touched]bool{}
	for j := len(e.history) - 1; j >= i; j-- {
		w := e.history[j]
		w.Lost = true
		r := tx.c.resources[w.Resource]
		if w.Prev == nil {
			delete(e.objects, r.storeKey(w.Key))
		} else {
			e.objects[r.storeKey(w.Key)] = w.Prev
		}
		reverted[touched{r, w.Key}] = true
	}
	t := now()
	for k := range reverted {
		k.r.logLocked(k.key, &entry{At: t, Revert: true, Target: k.r.lastWriteLocked(k.key)})
	}
	e.history = e.history[:i]
	e.rev = rev
	e.epoch++
	for _, s := range tx.c.servers {
		for _, wc := range s.caches {
			if wc.res.etcd == e && wc.pos > rev {
				wc.tainted = true
			}
		}
	}
}

// Resource is one API resource served by the model.
type Resource struct {
	ResourceSpec
	Name   string // the `resource` label: plural.group, or plural for core
	etcd   *etcd
	exists bool
	writes []*Write // every write, in commit order, lost ones included
	// keys is the truth of each key over time: its writes and the reverts
	// of restores, in time order.
	keys map[string][]*entry
}

// entry is one change of a key's true state: a write, or a restore that
// took the key back to Target (its last write that was not lost, nil:
// none).
type entry struct {
	At     time.Time
	W      *Write
	Revert bool
	Target *Write
}

func (r *Resource) logLocked(key string, e *entry) {
	if r.keys == nil {
		r.keys = map[string][]*entry{}
	}
	r.keys[key] = append(r.keys[key], e)
}

// lastWriteLocked returns the latest write of key that no restore undid.
func (r *Resource) lastWriteLocked(key string) *Write {
	log := r.keys[key]
	for i := len(log) - 1; i >= 0; i-- {
		if w := log[i].W; w != nil && !w.Lost {
			return w
		}
	}
	return nil
}

// lastWritesLocked returns the latest write of every key no restore undid:
// what etcd holds now, deletes included.
func (r *Resource) lastWritesLocked() map[string]*Write {
	out := make(map[string]*Write, len(r.keys))
	for k := range r.keys {
		if w := r.lastWriteLocked(k); w != nil {
			out[k] = w
		}
	}
	return out
}

// ResourceSpec describes one API resource.
type ResourceSpec struct {
	Group, Version, Plural, Kind string
	Namespaced                   bool
	// Etcd is the keyspace that stores it (default the main one); a
	// resource on its own etcd (--etcd-servers-overrides) has revisions of
	// its own.
	Etcd string
	// Opaque: served by an extension API server whose resource versions
	// are not integers.
	Opaque bool
	// NoBookmarks: its watches get no bookmarks (watch cache off for it, an
	// extension API server not built on the cacher).
	NoBookmarks bool
	// Generations: its objects report status.observedGeneration (served
	// as full objects to dynamic clients).
	Generations bool
}

// AddResource adds (or re-creates) a resource, with a fresh watch cache on
// every API server that is up. Creating a resource that is served already
// changes nothing (a CRD's create is refused with 409 AlreadyExists).
func (c *Cluster) AddResource(s ResourceSpec) *Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addResourceLocked(s)
}

// AddResource adds (or re-creates) a resource (see Cluster.AddResource).
func (tx *Tx) AddResource(s ResourceSpec) *Resource { return tx.c.addResourceLocked(s) }

func (c *Cluster) addResourceLocked(s ResourceSpec) *Resource {
	if s.Etcd == "" {
		s.Etcd = MainEtcd
	}
	name := s.Plural
	if s.Group != "" {
		name += "." + s.Group
	}
	r := c.resources[name]
	if r != nil && r.exists {
		return r
	}
	if r == nil {
		r = &Resource{ResourceSpec: s, Name: name}
		c.resources[name] = r
	}
	r.etcd = c.etcds[s.Etcd]
	r.exists = true
	t := now()
	for _, srv := range c.servers {
		if srv.up && !srv.cut { // (a server cut off etcd gets it at its release)
			srv.caches[name] = newWatchCache(srv, r, t)
		}
	}
	return r
}

// DeleteResource removes a resource (a CRD deleted): its objects are gone,
// its watches end, and requests for it get 404 until AddResource again.
func (tx *Tx) DeleteResource(name string) {
	c := tx.c
	r := c.resources[name]
	if r == nil || !r.exists {
		return
	}
	for _, o := range r.objectsLocked() {
		tx.Delete(name, o.Namespace, o.Name)
	}
	r.exists = false
	for _, s := range c.servers {
		if wc := s.caches[name]; wc != nil {
			wc.closeAll(now(), nil)
			delete(s.caches, name)
		}
	}
}

// Writes returns every write of resource res (lost ones included), in
// commit order. The slice is shared: read it with the model locked.
func (tx *Tx) Writes(res string) []*Write {
	if r := tx.c.resources[res]; r != nil {
		return r.writes
	}
	return nil
}

// Exists reports whether resource res is served.
func (tx *Tx) Exists(res string) bool {
	r := tx.c.resources[res]
	return r != nil && r.exists
}

func (r *Resource) storeKey(key string) string { return r.Name + "/" + key }

func (r *Resource) objectsLocked() []*Object {
	prefix := r.Name + "/"
	var out []*Object
	for k, o := range r.etcd.objects {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *Object) int {
		switch {
		case a.Key() < b.Key():
			return -1
		case a.Key() > b.Key():
			return 1
		}
		return 0
	})
	return out
}

// rvString renders a revision as the resource's API serves it: the
// integer, or for an extension API server an opaque token.
func (r *Resource) rvString(rev uint64) string {
	if r.Opaque {
		return "x" + strconv.FormatUint(rev, 36)
	}
	return strconv.FormatUint(rev, 10)
}

// parseRV reads a resource version a client sent: 0 for "" or "0", ok
// false for one the resource never served.
func (r *Resource) parseRV(s string) (uint64, bool) {
	if s == "" || s == "0" {
		return 0, true
	}
	if r.Opaque {
		if len(s) < 2 || s[0] != 'x' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[1:], 36, 64)
		return v, err == nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
