package model

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config configures a model control plane.
type Config struct {
	// Seed drives the model's own randomness (bookmark timing, balancer).
	Seed uint64
	// Servers is the number of kube-apiservers behind the load balancer
	// (default 1).
	Servers int
	// BookmarkPeriod is how often a watcher gets a bookmark (default 1m,
	// kube-apiserver's bookmarkFrequency); each comes up to BookmarkJitter
	// (default 1s, the cacher's dispatch tick) late.
	BookmarkPeriod, BookmarkJitter time.Duration
	// WatchCacheWindow is how long the watch cache keeps events for watches
	// that resume from an older resource version (default 75s, its
	// eventFreshDuration); older ones get 410 Expired.
	WatchCacheWindow time.Duration
	// FreshWait is how long a request that needs a newer resource version
	// than the watch cache holds waits for it (default 3s) before it falls
	// back to etcd (a consistent List) or fails with "too large resource
	// version" (a watch).
	FreshWait time.Duration
	// DispatchLag bounds how long after a watch cache learns a revision
	// from a progress notification (etcd's, or one a consistent read asked
	// for) its dispatcher has processed it: kube-apiserver's cacher sends
	// periodic bookmarks at the revision its dispatcher last processed, so
	// a bookmark due in that time carries the older one. Each notification
	// draws its lag in [0, DispatchLag) from a source of its own; 0 (the
	// default) dispatches at once.
	DispatchLag time.Duration
	// ListLatency bounds how much longer than the server's and the
	// connection's latency an informer's List (every page but a one-item
	// read's) and a watch-list's initial state take to arrive, drawn per
	// list in [0, ListLatency) from a source of its own: a large
	// resource's list, or a busy server. Its snapshot is the revision it
	// was served at, so a head sample can answer a newer revision while it
	// is in flight. 0 (the default): none.
	ListLatency time.Duration
}

func (c *Config) defaults() {
	if c.Servers <= 0 {
		c.Servers = 1
	}
	if c.BookmarkPeriod <= 0 {
		c.BookmarkPeriod = time.Minute
	}
	if c.BookmarkJitter <= 0 {
		c.BookmarkJitter = time.Second
	}
	if c.WatchCacheWindow <= 0 {
		c.WatchCacheWindow = 75 * time.Second
	}
	if c.FreshWait <= 0 {
		c.FreshWait = 3 * time.Second
	}
}

// Cluster is a model control plane. Its methods are safe for concurrent
// use: clients call Transport from their own goroutines while the
// simulation drives the workload and the faults.
type Cluster struct {
	cfg Config

	mu        sync.Mutex
	rng       *rand.Rand
	turns     *rand.Rand // draws each wake-up's turn (turnLocked)
	dispatch  *rand.Rand // draws each progress notification's dispatch lag
	lists     *rand.Rand // draws each list's latency (listLatencyLocked)
	etcds     map[string]*etcd
	resources map[string]*Resource
	servers   []*APIServer
	hosts     map[string]*hostConns
	nextConn  int // round-robin position of the balancer
	queue     actionQueue
	seq       int // global order of writes and actions
	uids      int
	pages     map[string]page // paged lists by continue token
	views     map[viewKey]*View
	arriving  *instant // the requests that arrived at the latest instant
}

// New returns a control plane with one etcd named "main" at revision 1000
// and cfg.Servers API servers.
func New(cfg Config) *Cluster {
	cfg.defaults()
	c := &Cluster{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		turns:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xd1b54a32d192ed03)),
		dispatch:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x94d049bb133111eb)),
		lists:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xbf58476d1ce4e5b9)),
		etcds:     map[string]*etcd{},
		resources: map[string]*Resource{},
		hosts:     map[string]*hostConns{},
	}
	c.AddEtcd(EtcdSpec{Name: MainEtcd, Revision: 1000})
	for i := range cfg.Servers {
		c.servers = append(c.servers, &APIServer{c: c, ID: i, up: true, caches: map[string]*watchCache{}})
	}
	return c
}

// MainEtcd is the name of the cluster's main etcd.
const MainEtcd = "main"

// Config returns the configuration with defaults filled in.
func (c *Cluster) Config() Config { return c.cfg }

// now is the model's clock: the caller's (a synctest bubble's) time.
func now() time.Time { return time.Now() }

// maxTurn bounds a turn: what the model makes happen at an instant
// reaches each client within it.
const maxTurn = time.Millisecond

// turnLocked draws the turn of one wake-up the model causes in a client: a
// delay in (0, maxTurn] after the instant it happens at. Every watch stream
// and every response gets its own, so two clients are never woken at one
// instant of the bubble's clock: which runs first is not the scheduler's
// choice (with two cores and a loaded machine it varies), it is the
// seed's, and a seed replays the same run every time (a retry's jitter, a
// watch's timeout are drawn from the process's one random source, in the
// order the clients wake). Turns are drawn under the model's lock, in the
// order of the model's moves, from a source of their own so that the
// model's other draws stay what they were.
func (c *Cluster) turnLocked() time.Duration {
	return 1 + time.Duration(c.turns.Int64N(int64(maxTurn)))
}

// instant holds the requests that reached the model at one instant of the
// bubble's clock, in the order their goroutines ran (the scheduler's).
type instant struct {
	at       time.Time
	arrivals []*arrival
	ranked   bool
}

// arrival is one request's place among those of its instant.
type arrival struct {
	key string
	of  *instant
}

// arrivalQuantum separates the requests of one instant: each goes on a
// quantum after the one before it, the first a quantum after the instant.
const arrivalQuantum = time.Nanosecond

// arriveLocked records a request of key at this instant.
func (c *Cluster) arriveLocked(key string) *arrival {
	t := now()
	if c.arriving == nil || !c.arriving.at.Equal(t) {
		c.arriving = &instant{at: t}
	}
	a := &arrival{key: key, of: c.arriving}
	c.arriving.arrivals = append(c.arriving.arrivals, a)
	return a
}

// rankLocked returns a's place among the requests of its instant, in the
// order of their keys (identical requests in the order they came). Call
// it once the clock moved past the instant: every request of it is in.
func (a *arrival) rankLocked() int {
	in := a.of
	if !in.ranked {
		slices.SortStableFunc(in.arrivals, func(x, y *arrival) int { return strings.Compare(x.key, y.key) })
		in.ranked = true
	}
	return slices.Index(in.arrivals, a)
}

// awaitTurn holds a request until its turn among those that arrived at its
// instant: they are served in one order whatever order their goroutines
// ran in (the scheduler's, which the machine's load changes: a goroutine
// preempted while it starts others lets them send first), so that a seed
// replays (TestRequestsOfOneInstantAreServedInOneOrder). The clock moves
// only once every goroutine of the bubble waits, so a quantum later every
// request of the instant is in; each then waits its rank in quanta.
func (c *Cluster) awaitTurn(ctx context.Context, key string) error {
	c.mu.Lock()
	a := c.arriveLocked(key)
	c.mu.Unlock()
	if err := sleepCtx(ctx, arrivalQuantum); err != nil {
		return err
	}
	c.mu.Lock()
	rank := a.rankLocked()
	c.mu.Unlock()
	return sleepCtx(ctx, time.Duration(rank)*arrivalQuantum)
}

// sleepCtx sleeps for d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// listLatencyLocked draws one list's latency beyond the server's and the
// connection's (Config.ListLatency).
func (c *Cluster) listLatencyLocked() time.Duration {
	if c.cfg.ListLatency <= 0 {
		return 0
	}
	return time.Duration(c.lists.Int64N(int64(c.cfg.ListLatency)))
}

// action is work scheduled at a time.
type action struct {
	at  time.Time
	seq int
	do  func(now time.Time)
	idx int
}

type actionQueue []*action

func (q actionQueue) Len() int { return len(q) }
func (q actionQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q actionQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *actionQueue) Push(x any) { a := x.(*action); a.idx = len(*q); *q = append(*q, a) }
func (q *actionQueue) Pop() any {
	old := *q
	a := old[len(old)-1]
	*q = old[:len(old)-1]
	a.idx = -1
	return a
}

// scheduleLocked runs do at at (or at the next Advance, if at has passed).
func (c *Cluster) scheduleLocked(at time.Time, do func(now time.Time)) *action {
	c.seq++
	a := &action{at: at, seq: c.seq, do: do}
	heap.Push(&c.queue, a)
	return a
}

func (c *Cluster) cancelLocked(a *action) {
	if a != nil && a.idx >= 0 {
		heap.Remove(&c.queue, a.idx)
	}
}

// At schedules do at t; it runs with the model locked (do must not call
// the Cluster's exported methods, but may call the Locked ones it is
// handed through Tx).
func (c *Cluster) At(t time.Time, do func(tx *Tx)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scheduleLocked(t, func(time.Time) { do(&Tx{c: c}) })
}

// Advance runs the scheduled work due by now, in time order.
func (c *Cluster) Advance() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(now())
}

func (c *Cluster) advanceLocked(t time.Time) {
	for len(c.queue) > 0 && !c.queue[0].at.After(t) {
		a := heap.Pop(&c.queue).(*action)
		a.do(a.at)
	}
}

// Next returns the time of the earliest scheduled work.
func (c *Cluster) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return time.Time{}, false
	}
	return c.queue[0].at, true
}

// Tx gives scheduled work and the simulation's scripts access to the model
// while it is locked.
type Tx struct{ c *Cluster }

// Do runs f with the model locked, after the work due by now.
func (c *Cluster) Do(f func(tx *Tx)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(now())
	f(&Tx{c: c})
}

// Cluster returns the cluster of tx.
func (tx *Tx) Cluster() *Cluster { return tx.c }

// Rand returns the model's random source.
func (tx *Tx) Rand() *rand.Rand { return tx.c.rng }

// Servers returns the API servers.
func (c *Cluster) Servers() []*APIServer { return c.servers }

// Resource returns the resource named name ("configmaps", "widgets.example.com").
func (c *Cluster) Resource(name string) *Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resources[name]
}

// Resources returns the resources, sorted by name.
func (c *Cluster) Resources() []*Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Resource, 0, len(c.resources))
	for _, r := range c.resources {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *Cluster) newUID() string {
	c.uids++
	return fmt.Sprintf("uid-%d", c.uids)
}
