package probe

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// heartbeatAnnotation is the annotation a canary write sets on its object.
// Writing metadata works for any resource kind: ConfigMap, Lease or a
// custom resource.
const heartbeatAnnotation = "rvsync.io/heartbeat"

// heartbeatOf reads a heartbeat annotation's value: when the write that
// set it was sent, UnixNano; 0 when it is not one.
func heartbeatOf(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// CanaryOptions configure one canary writer.
type CanaryOptions struct {
	// GVR and Kind of the canary object; default a ConfigMap. The resource
	// must be watched by the monitor (NewInformer or Instrument first), in
	// all namespaces or at least in Namespace.
	GVR  schema.GroupVersionResource
	Kind string
	// Namespace and Name of the object. Name must be unique per exporter
	// replica (the chart uses the pod name) so replicas never fight over one.
	Namespace, Name string
	// Interval between writes (default 10s) and Deadline after which an
	// undelivered write counts as lost (default 60s).
	Interval, Deadline time.Duration
	// OwnerReferences are set on the canary object when it is created, e.g.
	// the exporter's pod: the garbage collector then deletes the object with
	// its owner even when the writer cannot (it crashed, or lost its RBAC
	// before it stopped).
	OwnerReferences []metav1.OwnerReference
}

const defaultCanaryInterval = 10 * time.Second

func (o *CanaryOptions) defaults() {
	if o.GVR.Resource == "" {
		o.GVR, o.Kind = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap"
	}
	if o.Interval <= 0 {
		o.Interval = defaultCanaryInterval
	}
	if o.Deadline <= 0 {
		o.Deadline = 60 * time.Second
	}
}

// canaryState matches canary writes with their delivery by the informers
// of the canary's resource. It lives in the resource and is consulted for
// every event of it: one pointer check when there is no canary, two string
// comparisons when there is. Each informer that delivers a write is proven
// fresh as of the write, and only that informer: another one of the same
// resource may be behind a stuck cache.
type canaryState struct {
	namespace, name string
	interval        time.Duration // between writes
	clock           clock.PassiveClock
	latency         prometheus.Observer
	lost            prometheus.Counter

	mu            sync.Mutex
	pending       []canaryWrite // written, not yet delivered
	recent        []canaryWrite // delivered lately, for the informers that deliver them later
	written       uint64        // RV of the latest write (of the current history)
	seenRV        uint64        // highest RV of the canary object an informer delivered before its write answered
	seenAt        time.Time
	seenBy        []*informer // the informers that delivered seenRV
	proofs        map[*informer]time.Time
	reached       map[*informer]uint64 // the highest canary RV each informer's store holds
	expired       uint64               // the highest RV of a write no informer delivered by the deadline
	lastDelivered time.Time
	lastSent      time.Time // when the latest write that answered was sent
	// since: when the current history began for the canary (the latest
	// loss was proven, by a head that went back or a write below). A
	// canary event whose heartbeat is older carries a write sent before:
	// maybe of the history left behind (an informer's connection frozen
	// across a restore delivers it late), so it proves nothing of this one.
	since time.Time
}

type canaryWrite struct {
	rv   uint64
	sent time.Time
	// above: the informers whose stores held the write's RV or more when
	// it was sent. In one history a write commits above everything before
	// it, so for them it is of another history (etcd restored: the new one
	// reuses the lost one's revisions) and no RV they reach shows they
	// hold it; only its own event would.
	above map[*informer]bool
}

// coveredBy reports whether a store at rv holds w.
func (w canaryWrite) coveredBy(in *informer, rv uint64) bool { return w.rv <= rv && !w.above[in] }

// wrote registers a write that returned rv and was sent at sent
// (wroteFrom, without knowing what the stores held then).
func (c *canaryState) wrote(rv uint64, sent time.Time) (historyLost bool) {
	return c.wroteFrom(rv, sent, nil)
}

// wroteFrom registers a write that returned rv and was sent at sent, when
// the informers' stores held the RVs in held.
//
// Writes are sequential, so each returns a higher RV than every canary
// write before it and every canary RV delivered before it was sent (a
// change delivered while it was on its way, such as the object's deletion,
// may be later than it). One below them
// means the store's history went back (etcd restored from a backup): what
// was seen, and the writes pending in the lost history, belong to it. (A
// list's RV is not a canary RV: a list at an RV above a write whose answer
// is still on its way is no sign of anything.)
func (c *canaryState) wroteFrom(rv uint64, sent time.Time, held map[*informer]uint64) (historyLost bool) {
	var above map[*informer]bool
	for in, at := range held {
		if at >= rv {
			if above == nil {
				above = map[*informer]bool{}
			}
			above[in] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSent = maxTime(c.lastSent, sent)
	if rv < c.written || rv < c.seenRV && c.seenAt.Before(sent) {
		c.forgetLocked(rv)
		c.since = maxTime(c.since, sent)
		historyLost = true
	}
	prev := c.written
	c.written = rv
	// the watch beat the write's answer; unless nothing written in this
	// history came before it (the first write, or the first after a
	// restore reset the memory): then an RV seen above it may be a lost
	// history's (a relist from a cache that kept it), not a later change
	if rv <= c.seenRV && c.seenRV != 0 && (prev != 0 || rv == c.seenRV) {
		c.deliveredLocked(sent, c.seenAt)
		for _, in := range c.seenBy {
			c.proveLocked(in, sent)
		}
		c.recentLocked(canaryWrite{rv: rv, sent: sent, above: above})
		return historyLost
	}
	c.pending = append(c.pending, canaryWrite{rv: rv, sent: sent, above: above})
	return historyLost
}

// reset forgets the RVs of a history the store no longer has, whose loss
// was proven at at (by the head probe, or another canary's write) with
// etcd's head then at head: its pending writes above head are lost
// (simulation seed 1007104: kept pending, one expired at its lost RV and
// stayed overdue for every informer).
func (c *canaryState) reset(at time.Time, head uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since = maxTime(c.since, at)
	c.forgetLocked(head)
}

// forgetLocked drops the memory of a lost history above rv: its pending
// writes are lost (they will never be delivered).
func (c *canaryState) forgetLocked(rv uint64) {
	c.written, c.seenRV, c.seenAt, c.seenBy, c.recent, c.proofs, c.reached, c.expired = 0, 0, time.Time{}, nil, nil, nil, nil, 0
	kept := c.pending[:0]
	for _, w := range c.pending {
		if w.rv > rv {
			c.lost.Inc()
			continue
		}
		kept = append(kept, w)
	}
	c.pending = kept
}

// delivered records that informer in applied the canary object at rv to
// its store at now, carrying the write sent at stamp (its heartbeat,
// UnixNano; 0: unknown). Every write at or below rv reached it by then
// (watch order); it returns the latest send time among them, or false if
// none. An event of a write sent before the current history began proves
// nothing of it (see since).
func (c *canaryState) delivered(in *informer, rv uint64, stamp int64, now time.Time) (sent time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.before(stamp) {
		return time.Time{}, false
	}
	switch {
	case rv > c.seenRV:
		c.seenRV, c.seenAt, c.seenBy = rv, now, []*informer{in}
	case rv == c.seenRV:
		c.seenBy = append(c.seenBy, in)
	}
	return c.coveredLocked(in, rv, now)
}

// covered records that informer in's store holds the canary object as of
// rv (a list, or a batch of deltas, at rv reached it): every write up to rv
// reached it, if not as its own event. stamp is the heartbeat of the
// batch's latest canary event (0: unknown, or a list): a batch carrying a
// write sent before the current history began proves nothing of it.
func (c *canaryState) covered(in *informer, rv uint64, stamp int64, now time.Time) (sent time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.before(stamp) {
		return time.Time{}, false
	}
	return c.coveredLocked(in, rv, now)
}

// before reports whether heartbeat stamp names a write sent before the
// current history began.
func (c *canaryState) before(stamp int64) bool {
	return stamp != 0 && !c.since.IsZero() && stamp < c.since.UnixNano()
}

func (c *canaryState) coveredLocked(in *informer, rv uint64, now time.Time) (sent time.Time, ok bool) {
	if c.reached == nil {
		c.reached = map[*informer]uint64{}
	}
	c.reached[in] = max(c.reached[in], rv)
	kept := c.pending[:0]
	for _, w := range c.pending {
		if !w.coveredBy(in, rv) {
			kept = append(kept, w)
			continue
		}
		c.deliveredLocked(w.sent, now)
		c.recentLocked(w)
		sent, ok = maxTime(sent, w.sent), true
	}
	c.pending = kept
	for _, w := range c.recent {
		if w.coveredBy(in, rv) {
			sent, ok = maxTime(sent, w.sent), true
		}
	}
	if ok {
		c.proveLocked(in, sent)
	}
	return sent, ok
}

func (c *canaryState) recentLocked(w canaryWrite) {
	c.recent = append(c.recent, w)
	if len(c.recent) > 8 {
		c.recent = c.recent[1:]
	}
}

func (c *canaryState) proveLocked(in *informer, sent time.Time) {
	if c.proofs == nil {
		c.proofs = map[*informer]time.Time{}
	}
	c.proofs[in] = maxTime(c.proofs[in], sent)
}

// overdue returns the RV of the latest canary write sent more than age
// before now that informer in's store does not hold yet (0: none): the
// store is behind at least that write, whichever informer delivered it.
func (c *canaryState) overdue(in *informer, now time.Time, age time.Duration) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rv uint64
	if c.expired > c.reached[in] {
		rv = c.expired
	}
	for _, w := range append(c.pending, c.recent...) {
		if now.Sub(w.sent) > age && !w.coveredBy(in, c.reached[in]) {
			rv = max(rv, w.rv)
		}
	}
	return rv
}

// passed proves informer in fresh as of the latest canary write at or
// below rv, which its store reached by another object's event or a
// bookmark: a store at rv holds everything of its scope committed before
// that write was sent, whether or not its scope holds the canary object
// (one of another namespace, or a selector that leaves the canary out,
// never delivers it). It records no delivery: only the canary object's
// own event, or a list or batch that holds it, is one.
func (c *canaryState) passed(in *informer, rv uint64) (sent time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ws := range [2][]canaryWrite{c.pending, c.recent} {
		for _, w := range ws {
			if w.coveredBy(in, rv) {
				sent, ok = maxTime(sent, w.sent), true
			}
		}
	}
	if ok {
		c.proveLocked(in, sent)
	}
	return sent, ok
}

// heads reports whether the canary's writes still read its resource's
// head: one that answered was sent within headsAfterWrites intervals
// before now (as the head probe's reads are unknown after three probe
// intervals). A write answered is a head of its resource (the store that
// reaches it was fresh when it was sent; one that lacks it is behind), so
// while they answer, its stores' staleness is known without the head
// probe.
func (c *canaryState) heads(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lastSent.IsZero() && now.Sub(c.lastSent) <= headsAfterWrites*c.interval
}

// headsAfterWrites: the canary's writes are the head of its resource while
// one of the last this many intervals answered.
const headsAfterWrites = 3

// proof returns the latest canary write informer in delivered: its store
// held everything committed before it.
func (c *canaryState) proof(in *informer) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proofs[in]
}

func (c *canaryState) deliveredLocked(sent, at time.Time) {
	c.latency.Observe(max(0, at.Sub(sent).Seconds()))
	if at.After(c.lastDelivered) {
		c.lastDelivered = at
	}
}

// expire counts and drops writes older than deadline.
func (c *canaryState) expire(now time.Time, deadline time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	kept := c.pending[:0]
	for _, w := range c.pending {
		if now.Sub(w.sent) > deadline {
			n++
			c.expired = max(c.expired, w.rv)
			continue
		}
		kept = append(kept, w)
	}
	c.pending = kept
	c.lost.Add(float64(n))
	return n
}

func (c *canaryState) lastDeliveredUnix() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastDelivered.IsZero() {
		return 0
	}
	return float64(c.lastDelivered.UnixNano()) / 1e9
}

// Canary writes a heartbeat object every interval and times how long the
// informer of its resource takes to deliver each write's exact RV: the
// active, exact freshness signal. Writes that fail are counted and logged,
// never fatal.
type Canary struct {
	opts   CanaryOptions
	client dynamic.Interface
	m      *Monitor
	res    *resource
	state  *canaryState
	writes [2]prometheus.Counter // success, error
	log    logr.Logger
}

// NewCanary returns a canary writing to the object opts names, timed by the
// informer that watches its resource. cfg is the writer's client
// configuration; the writer gets a connection of its own, like the head
// probe, so a stuck informer connection cannot hold its writes back.
// A resource has one canary at a time: a second would take over the
// deliveries the first waits for (and count the first's writes lost), so
// NewCanary refuses it until the first's Run has ended.
func (m *Monitor) NewCanary(cfg *rest.Config, opts CanaryOptions) (*Canary, error) {
	opts.defaults()
	if opts.Namespace == "" || opts.Name == "" || opts.Kind == "" {
		return nil, fmt.Errorf("canary %s: kind, namespace and name are required", resourceName(opts.GVR.GroupResource()))
	}
	res, err := m.tracked(opts.GVR)
	if err != nil {
		return nil, fmt.Errorf("canary: %w", err)
	}
	// the writes land in the canary's resource's etcd: its reads are the
	// head of its space (see proof.Space.Anchor)
	sp := res.space.Load()
	if src, ok := sp.sourceOf(res.name); ok {
		sp.mu.Lock()
		sp.core.Anchor(src.id)
		sp.mu.Unlock()
	}
	client, err := dynamic.NewForConfig(ownConnection(cfg))
	if err != nil {
		return nil, fmt.Errorf("canary client: %w", err)
	}
	st := &canaryState{
		namespace: opts.Namespace, name: opts.Name, interval: opts.Interval, clock: m.opts.Clock,
		latency: m.metrics.CanaryDeliveryLatency.WithLabelValues(res.name),
		lost:    m.metrics.CanaryLost.WithLabelValues(res.name),
	}
	if !res.canary.CompareAndSwap(nil, st) {
		old := res.canary.Load()
		return nil, fmt.Errorf("canary %s: %s/%s already writes to it; one canary per resource (stop the first: its Run returns)", res.name, old.namespace, old.name)
	}
	return &Canary{
		opts: opts, client: client, m: m, res: res, state: st,
		writes: [2]prometheus.Counter{
			m.metrics.CanaryWrites.WithLabelValues(res.name, catalog.ResultSuccess),
			m.metrics.CanaryWrites.WithLabelValues(res.name, catalog.ResultError),
		},
		log: m.opts.Logger.WithValues("canary", res.name, "namespace", opts.Namespace, "name", opts.Name),
	}, nil
}

// Run writes until ctx ends, then deletes the canary object; the
// resource may then have another canary.
func (c *Canary) Run(ctx context.Context) {
	defer c.res.canary.CompareAndSwap(c.state, nil)
	wait.JitterUntilWithContext(ctx, c.beat, c.opts.Interval, 0.1, true)
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.client.Resource(c.opts.GVR).Namespace(c.opts.Namespace).Delete(dctx, c.opts.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Error(err, "could not delete the canary object on shutdown (its owner references, if any, let the garbage collector remove it)")
	}
}

func (c *Canary) beat(ctx context.Context) {
	now := c.res.clock.Now()
	if n := c.state.expire(now, c.opts.Deadline); n > 0 {
		warn(c.log, "canary writes not delivered within the deadline", "lost", n, "deadline", c.opts.Deadline)
	}
	// what each store held before the write went out: a write that
	// commits at or below it is of another history than that store's
	held := map[*informer]uint64{}
	for _, in := range c.res.informerList() {
		held[in] = in.heldRV()
	}
	// a write slower than the interval is a slow write, not a failed one:
	// wait for it up to the deadline (the next beat waits too)
	wctx, cancel := context.WithTimeout(ctx, min(c.opts.Deadline, 30*time.Second))
	defer cancel()
	rvs, err := c.write(wctx, now)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		c.writes[1].Inc()
		c.log.Error(err, "canary write failed", "reason", reasonOf(err))
		return
	}
	c.writes[0].Inc()
	rv, ok := proof.ParseRV(rvs)
	if !ok {
		return // opaque RV: the resource reports it
	}
	below := c.state.wroteFrom(rv, now, held)
	sp := c.res.space.Load()
	src, sourced := sp.sourceOf(c.res.name)
	sp.mu.Lock()
	// a write is the space's head only where its resource's etcd is the
	// space's: the reference's, or one the reference confirmed. Another
	// canary's resource may be of another etcd, its `space:` omitted,
	// until the samples settle it (events on an etcd of their own, lower
	// than the main one: every write of theirs landed below the head, a
	// restore that never was)
	settled := !sourced
	if sourced {
		settled, _ = sp.core.Settled(src.id)
	}
	lost := settled && sp.core.Write(rv, now, below)
	if sourced {
		sp.core.OwnWrite(src.id, rv, now)
	}
	sp.mu.Unlock()
	if trace := c.log.V(2); trace.Enabled() { // formats only when traced
		trace.Info("canary write", "rv", rv, "sent", stamp(now), "recv", stamp(c.res.clock.Now()), "below", below, "lost", lost)
	}
	if lost {
		warn(sp.log, "a write landed below resource versions already seen: the store's history went back (etcd restored?); history reset")
		c.m.regressed(sp, now, rv)
	}
}

// write patches the heartbeat annotation, creating the object if needed, and
// returns the RV of the write.
func (c *Canary) write(ctx context.Context, now time.Time) (string, error) {
	res := c.client.Resource(c.opts.GVR).Namespace(c.opts.Namespace)
	stamp := strconv.FormatInt(now.UnixNano(), 10)
	patch := []byte(`{"metadata":{"annotations":{"` + heartbeatAnnotation + `":"` + stamp + `"}}}`)
	obj, err := res.Patch(ctx, c.opts.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(c.opts.GVR.GroupVersion().String())
		u.SetKind(c.opts.Kind)
		u.SetNamespace(c.opts.Namespace)
		u.SetName(c.opts.Name)
		u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "rvsync-slo", "app.kubernetes.io/component": "canary"})
		u.SetOwnerReferences(c.opts.OwnerReferences)
		u.SetAnnotations(map[string]string{heartbeatAnnotation: stamp})
		obj, err = res.Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}
