package probe

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// headFunc returns the current head resource version of one resource: the
// RV of a consistent List with limit=1.
type headFunc func(ctx context.Context) (string, error)

// metadataHead returns a headFunc that lists gvr's metadata with limit=1 and
// resourceVersion "" — a consistent read that kube-apiserver (1.34+) serves
// from its watch cache once the cache caught up with etcd's current
// revision, asking etcd for a progress notification if it has to wait. So
// the read also brings that resource's watch cache up to date, and its next
// bookmark carries the current revision (see Monitor.freshen).
func metadataHead(client metadata.Interface, gvr schema.GroupVersionResource) headFunc {
	return func(ctx context.Context) (string, error) {
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		return list.GetResourceVersion(), nil
	}
}

// listerHead returns a headFunc that reads through lw, an informer's own
// ListerWatcher, as metadataHead reads through the monitor's client: a
// List with limit=1 and resourceVersion "" (lw's namespace and selectors
// apply; a consistent list answers etcd's current revision all the same).
func listerHead(lw cache.ListerWatcherWithContext) headFunc {
	return func(ctx context.Context) (string, error) {
		obj, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return "", err
		}
		return list.GetResourceVersion(), nil
	}
}

// headSource is a resource whose consistent reads sample its space's head.
type headSource struct {
	id       int32
	resource string
	read     headFunc
}

// space is an RV space: the resources whose RVs come from one etcd (by
// default, the whole cluster), under one head probe, so the API-server
// cost does not grow with the number of resources. What its samples mean
// is settled by proof.Space; space adds its lock, its sources' reads and
// its resources.
type space struct {
	name string
	log  logr.Logger

	mu        sync.Mutex
	core      *proof.Space
	sources   map[int32]headSource // every source it ever had, by id
	latest    map[string]int32     // the latest source of each resource, by resource
	checking  map[int32]bool       // sources whose settling read is in flight
	nextID    int32
	resources []*resource
	dropped   uint64 // timeline entries dropped so far, as counted
}

func newSpace(name string, capacity int, base time.Time, interval time.Duration, log logr.Logger) *space {
	return &space{name: name, log: log, core: proof.NewSpace(capacity, base, interval), sources: map[int32]headSource{}, latest: map[string]int32{}, checking: map[int32]bool{}}
}

// addSource makes resource a head source of the space, once.
func (s *space) addSource(resource string, read headFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, src := range s.sources {
		if src.resource == resource && slices.Contains(s.core.Sources(), src.id) {
			return
		}
	}
	src := headSource{id: s.nextID, resource: resource, read: read}
	s.nextID++
	s.sources[src.id] = src
	s.latest[resource] = src.id
	s.core.AddSource(src.id)
}

// doubted reports whether resource's reads may come from another etcd
// than the space's (see proof.Space.Doubted).
func (s *space) doubted(resource string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.latest[resource]
	return ok && slices.Contains(s.core.Sources(), id) && s.core.Doubted(id)
}

// unsettledLocked reports whether resource reads the space's head but
// the reference has not yet confirmed its etcd as the space's (see
// proof.Space.Settled); the caller holds mu.
func (s *space) unsettledLocked(resource string) bool {
	id, ok := s.latest[resource]
	if !ok {
		return false
	}
	settled, current := s.core.Settled(id)
	return current && !settled
}

// sourceOf returns the head source reading resource, if the space has one.
func (s *space) sourceOf(resource string) (headSource, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.core.Sources() {
		if src := s.sources[id]; src.resource == resource {
			return src, true
		}
	}
	return headSource{}, false
}

// unconfirmed returns up to n sources the reference has not confirmed
// (proof.Space.Unconfirmed) whose check read is not in flight, and marks
// them in flight; checked unmarks each.
func (s *space) unconfirmed(n int) []headSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []headSource
	for _, id := range s.core.Unconfirmed(n) {
		if !s.checking[id] {
			s.checking[id] = true
			out = append(out, s.sources[id])
		}
	}
	return out
}

// checked records that the settling read of source id ended.
func (s *space) checked(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.checking, id)
}

// isReference reports whether id is the space's reference source.
func (s *space) isReference(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Reference() == id
}

// probed reports whether the space has a head source.
func (s *space) probed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.core.Sources()) > 0
}

// order returns the sources a head probe tries, in order.
func (s *space) order() []headSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []headSource
	for _, id := range s.core.Order() {
		out = append(out, s.sources[id])
	}
	return out
}

func (s *space) addResource(r *resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources = append(s.resources, r)
}

func (s *space) removeResource(r *resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources = slices.DeleteFunc(s.resources, func(x *resource) bool { return x == r })
}

func (s *space) resourceList() []*resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resources)
}

// headInfo is what a scrape reports of a space's head.
type headInfo struct {
	rv       uint64
	known    bool
	age      time.Duration
	ageKnown bool
}

func (s *space) head(now time.Time) headInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var h headInfo
	if len(s.core.Sources()) == 0 {
		return h
	}
	h.rv, _, h.known = s.core.Head()
	h.age, h.ageKnown = s.core.HeadAge(now)
	return h
}

// sample records one consistent read of src (a head probe, or with probe
// false a freshness read) requested at sent and answered at recv, and acts
// on what it meant; it reports whether it answered and, if with an integer
// head, which.
func (m *Monitor) sample(sp *space, src headSource, rvs string, err error, sent, recv time.Time, probe bool) (head uint64, integer, answered bool) {
	m.metrics.ListDuration.WithLabelValues(src.resource, catalog.KindProbe, listResult(err)).Observe(recv.Sub(sent).Seconds())
	if err != nil {
		sp.mu.Lock()
		failures := sp.core.Failed(src.id)
		sp.mu.Unlock()
		reason := reasonOf(err)
		m.metrics.HeadProbeErrors.WithLabelValues(src.resource, reason).Inc()
		if r := m.resourceOf(src.resource); r != nil && reason == catalog.ReasonNotFound {
			r.readAnswered(recv, false)
		}
		switch {
		case failures == 1: // once per run of failures; the metric counts each
			warn(sp.log, "head probe failed; retrying with backoff", "resource", src.resource, "reason", reason, "err", err)
		case failures%10 == 0: // a long run of failures says why now and then
			warn(sp.log, "head probe still failing", "resource", src.resource, "failures", failures, "reason", reason, "err", err)
		default:
			sp.log.V(1).Info("head probe failed again", "resource", src.resource, "failures", failures, "err", err)
		}
		return 0, false, false
	}
	if r := m.resourceOf(src.resource); r != nil {
		r.readAnswered(recv, true)
	}
	rv, integer := proof.ParseRV(rvs)
	sp.mu.Lock()
	wasOpaque := sp.core.Opaque()
	v := sp.core.Sample(src.id, rv, integer, sent, recv, probe)
	opaque := sp.core.Opaque()
	dropped := sp.core.Timeline.Dropped() - sp.dropped
	sp.dropped += dropped
	resources := slices.Clone(sp.resources)
	sp.mu.Unlock()
	if trace := sp.log.V(2); trace.Enabled() { // formats only when traced
		trace.Info("head sample", "resource", src.resource, "rv", rvs, "probe", probe, "sent", stamp(sent), "recv", stamp(recv),
			"accepted", v.Accepted, "regressed", v.Regressed, "known", v.Known, "foreign", len(v.Foreign))
	}
	if opaque && !wasOpaque {
		m.metrics.HeadProbeErrors.WithLabelValues(src.resource, catalog.ReasonOpaqueRV).Inc()
		sp.log.Info("head resource version is not an integer; lag math is off for this RV space", "resource", src.resource, "rv", rvs)
	}
	if dropped > 0 {
		for _, r := range resources {
			m.metrics.TimelineDropped.WithLabelValues(r.name).Add(float64(dropped))
		}
	}
	m.settle(sp, v, rv)
	return rv, integer, true
}

// stamp formats t for a trace line: to the millisecond, wall clock.
func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// settle acts on the verdict of a sample that saw head rv: a source found
// to read another etcd moves, with its resource, to an RV space of its
// own; a head that went back is counted as a regression of every resource
// of the space.
func (m *Monitor) settle(sp *space, v proof.Verdict, rv uint64) {
	for _, id := range v.Foreign {
		sp.mu.Lock()
		src := sp.sources[id]
		sp.mu.Unlock()
		to := m.split(src, sp)
		warn(sp.log, "a resource answers the head probe from another etcd (or with resource versions that are not integers): it moves to another RV space (configure `space` for it to make this explicit)", "resource", src.resource, "to", to.name)
	}
	switch {
	case v.Regressed && v.Known:
		sp.log.Info("head resource version went back again, to etcd's history after a loss counted before; history reset")
	case v.Regressed:
		warn(sp.log, "head resource version went backwards (etcd restored?); history reset")
		m.regressed(sp, m.opts.Clock.Now(), rv)
	}
}

// regressed counts a regression of every resource of sp but the doubted
// (see proof.Space.Doubted), proven at at
// with etcd's head at head, and forgets what their canaries saw of the
// lost history.
func (m *Monitor) regressed(sp *space, at time.Time, head uint64) {
	for _, r := range sp.resourceList() {
		if sp.doubted(r.name) {
			// it may read another etcd, one that did not go back
			// (simulation seed 1408259: events on an etcd of its own,
			// idle beside idle configmaps, counted the main etcd's restore)
			continue
		}
		r.regressions.Inc()
		if c := r.canary.Load(); c != nil {
			c.reset(at, head)
		}
	}
}

// probe reads the head of sp once: from its reference source, falling back
// through the others. Once the reference answered, it starts, in wg, the
// reads of sources whose etcd is not settled (see checkSources).
func (m *Monitor) probe(ctx context.Context, sp *space, wg *sync.WaitGroup) {
	for _, src := range sp.order() {
		sent := m.opts.Clock.Now()
		rvs, err := m.read(ctx, src)
		if err != nil && ctx.Err() != nil {
			return
		}
		if _, _, answered := m.sample(sp, src, rvs, err, sent, m.opts.Clock.Now(), true); answered {
			if sp.isReference(src.id) {
				m.checkSources(ctx, sp, wg)
			}
			return
		}
	}
}

// read is one consistent read of src, bounded by the probe timeout.
func (m *Monitor) read(ctx context.Context, src headSource) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	return src.read(pctx)
}

// checkReads is how many sources of a space whose etcd is not settled a
// head probe reads beside its reference, each round: the exporter's 14
// default resources are all read within four rounds of its start.
const checkReads = 4

// checkSources reads, in wg, sources of sp whose etcd the samples have not
// settled, one consistent read each (a head sample, as a freshness read
// is): the reference's next probe confirms each, or contradicts it until
// it is found to read another etcd and moves to another space. A
// busy resource sends no freshness read, and with them off none does: a
// resource of another etcd listed beside the reference would share its
// head, and count its restores, for good.
func (m *Monitor) checkSources(ctx context.Context, sp *space, wg *sync.WaitGroup) {
	for _, src := range sp.unconfirmed(checkReads) {
		wg.Go(func() {
			defer sp.checked(src.id)
			sent := m.opts.Clock.Now()
			rvs, err := m.read(ctx, src)
			if err != nil && ctx.Err() != nil {
				return
			}
			m.sample(sp, src, rvs, err, sent, m.opts.Clock.Now(), false)
		})
	}
}
