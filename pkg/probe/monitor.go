package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// defaultSpace is the RV space of every resource not configured otherwise:
// all resources stored in the cluster's main etcd share its revision.
const defaultSpace = "cluster"

// Options configure a Monitor. Zero values take the defaults.
type Options struct {
	// Clock drives every measurement and the monitor's schedule; tests
	// pass a fake one.
	Clock clock.WithTicker
	// ProbeInterval is the period of each RV space's head probe (default 5s,
	// jittered by up to 10 %).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one head probe (default: the probe interval, at least 5s).
	ProbeTimeout time.Duration
	// Logger receives the monitor's logs.
	Logger logr.Logger
	// Controller, when set, adds the label controller=<Controller> to every
	// series, telling apart several processes that embed the probe.
	Controller string
	// HeadProbe is the client configuration of the head probe, which gets a
	// connection of its own. Every resource instrumented afterwards becomes
	// a source of its RV space's head. Nil turns the head probe off (the
	// default for embedded use): RV lag and staleness are then not
	// computed, every other signal is.
	HeadProbe *rest.Config
	// NoFreshnessReads turns off the freshness reads that make quiet
	// resources' bookmarks prove freshness (see Monitor.Start): about one
	// consistent List with limit=1 per quiet resource per minute. Without
	// them, a quiet resource is proven fresh only as often as etcd sends
	// progress notifications, and its staleness saws up to ten minutes on
	// etcd's default; the staleness SLI allows for that either way.
	NoFreshnessReads bool

	// timelineCapacity bounds each RV space's head timeline (default 4096
	// distinct heads: more than 5 h of history at one new head per 5s
	// probe); tests shrink it.
	timelineCapacity int
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 5 * time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = max(o.ProbeInterval, 5*time.Second)
	}
	if o.timelineCapacity <= 0 {
		o.timelineCapacity = 4096
	}
}

// Monitor measures how far informer caches trail the API server. It keeps
// one resource per watched resource (with its informers) and one head
// probe per RV space, and exports everything under the catalog's names.
type Monitor struct {
	opts    Options
	metrics *metrics
	start   time.Time

	headOnce   sync.Once
	headClient metadata.Interface // nil: no head probe
	headErr    error

	mu        sync.Mutex
	spaces    map[string]*space
	resources map[string]*resource
	// learned: the spaces made for resources found to read another etcd
	// than their space's, in order; left: per resource, the spaces it was
	// found foreign to (see split)
	learned []*space
	left    map[string][]*space
	// recordDeliveries: stale-read checks are on, so informers record
	// when they delivered each object's version (see deliveries)
	recordDeliveries bool
}

// New returns a Monitor with no resources.
func New(opts Options) *Monitor {
	opts.defaults()
	return &Monitor{
		opts:      opts,
		metrics:   newMetrics(),
		start:     opts.Clock.Now(),
		spaces:    map[string]*space{},
		resources: map[string]*resource{},
		left:      map[string][]*space{},
	}
}

// Register registers the monitor's metric families with reg.
func (m *Monitor) Register(reg prometheus.Registerer) error {
	if m.opts.Controller != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{catalog.LabelController: m.opts.Controller}, reg)
	}
	return m.metrics.register(reg, m.snapshots)
}

// Resource is a resource whose informer the monitor builds (NewInformer).
type Resource struct {
	// GVR is the resource; its `resource` label is `plural.group`.
	GVR schema.GroupVersionResource
	// Space is its RV space: resources stored in one etcd share one head
	// probe. Empty: the cluster's main etcd. Set it for a resource on its
	// own etcd (--etcd-servers-overrides) or an extension API server.
	Space string
	// ObservedGenerationPath, when set (e.g. "status.observedGeneration"),
	// tracks generation convergence: the informer then keeps generation and
	// observed generation per object instead of the key alone.
	ObservedGenerationPath string
}

// NewInformer returns an instrumented informer of r across all namespaces
// that fetches metadata only and keeps the least the signals need: digests
// of object keys, or with convergence, identity and generations (see
// Resource.ObservedGenerationPath). Its event handlers receive internal
// objects (a digest of "namespace/name" and the resource version, or with
// convergence, identity and generations), and those of a key informer run
// in its reflector's goroutine, in order: it is a measuring instrument,
// not a cache to read from (use Instrument for that). cfg is the client configuration
// of its List and Watch calls, and of its freshness reads: they share its
// connection, so they reach the API server whose watch cache feeds it. Run
// it like any informer.
func (m *Monitor) NewInformer(cfg *rest.Config, r Resource) (cache.SharedIndexInformer, error) {
	res := m.track(r.GVR, r.Space)
	if r.ObservedGenerationPath != "" {
		return m.newConvergenceInformer(cfg, r.GVR, res, r.ObservedGenerationPath)
	}
	return m.newKeyInformer(cfg, r.GVR, res)
}

// Instrument measures an informer of your own: it wraps lw, the
// ListerWatcher of an informer of gvr, and passes the wrapped one to build,
// which constructs the informer (e.g. cache.NewSharedIndexInformer). The
// informer it returns is the one build made, observed by the monitor; call
// Instrument before starting it. Several informers of one resource (one per
// namespace, typed and metadata ones) are each measured, and the resource
// reports the worst; a stopped informer leaves the measurement. With a
// head probe (Options.HeadProbe), a quiet informer's freshness read, once
// per bookmark period, is a List of limit 1 through lw: it takes the
// informer's own connection, so it reaches the API server whose watch cache
// feeds it (on HTTP/2) and makes that cache catch up before its bookmark.
func (m *Monitor) Instrument(gvr schema.GroupVersionResource, lw cache.ListerWatcher, build func(cache.ListerWatcher) cache.SharedIndexInformer) cache.SharedIndexInformer {
	r := m.track(gvr, "")
	ilw := m.instrument(r, lw)
	if client, err := m.head(); err == nil && client != nil {
		// the freshness reads go through lw itself, so they take the
		// informer's own connection and make its watch cache catch up; the
		// monitor cannot see that connection's protocol (HTTP/1.1 behind
		// a balancer may place a read on another server), so a bookmark
		// after one proves only the head samples its RV covers
		m.freshenWith(ilw.state, listerHead(ilw.inner), false)
	}
	inf := build(ilw)
	ilw.state.attach(inf, m.opts.Logger)
	return inf
}

// track returns the resource gvr in RV space spaceName ("" for the
// default), creating it (and, with a head probe, its head source) on first
// use.
func (m *Monitor) track(gvr schema.GroupVersionResource, spaceName string) *resource {
	name := resourceName(gvr.GroupResource())
	m.mu.Lock()
	r, ok := m.resources[name]
	if !ok {
		s := m.space(spaceName)
		r = newResource(name, m.opts.Clock, s, m.metrics, m.opts.ProbeInterval)
		r.recordDeliveries.Store(m.recordDeliveries)
		s.addResource(r)
		m.resources[name] = r
	}
	m.mu.Unlock()
	if ok || m.opts.HeadProbe == nil {
		return r
	}
	client, err := m.head()
	if err != nil {
		m.opts.Logger.Error(err, "no head probe: its client cannot be built")
		return r
	}
	r.space.Load().addSource(name, metadataHead(client, gvr))
	return r
}

// head returns the head probe's client, built once on a connection of its
// own; nil without Options.HeadProbe.
func (m *Monitor) head() (metadata.Interface, error) {
	if m.opts.HeadProbe == nil {
		return nil, nil
	}
	m.headOnce.Do(func() {
		m.headClient, m.headErr = metadata.NewForConfig(ownConnection(m.opts.HeadProbe))
	})
	return m.headClient, m.headErr
}

// space returns the RV space named name, creating it. m.mu must be held.
func (m *Monitor) space(name string) *space {
	if name == "" {
		name = defaultSpace
	}
	s, ok := m.spaces[name]
	if !ok {
		s = newSpace(name, m.opts.timelineCapacity, m.start, m.opts.ProbeInterval, m.opts.Logger.WithValues("space", name))
		m.spaces[name] = s
	}
	return s
}

// split moves the resource of src, found to answer from another etcd than
// its space from, to another RV space, with src as a head source: the
// first space learnt this way whose reads it has not been found to
// contradict, or a new one named after it. Resources of one etcd found
// foreign to the space of another share its history there: a restore a
// canary's write proves in one is every one's (simulation seed 1313866:
// events on an etcd of their own listed first, widgets and the canary's
// configmaps each moved to a space of their own; the main etcd restored,
// the canary's write below counted it in configmaps' space, and widgets,
// whose head probe a frozen watch cache answered at the lost history's
// RV, read fresh while its cache lacked every change since). The space it
// joins checks its reads as any unsettled source's, and finds it foreign
// again if they contradict its reference. What its informers proved in
// the old space proves nothing.
func (m *Monitor) split(src headSource, from *space) *space {
	m.mu.Lock()
	m.left[src.resource] = append(m.left[src.resource], from)
	own := m.learnedSpace(src.resource)
	r := m.resources[src.resource]
	m.mu.Unlock()
	own.addSource(src.resource, src.read)
	if r == nil {
		return own
	}
	old := r.space.Swap(own)
	if old != own {
		old.removeResource(r)
		own.addResource(r)
	}
	now := m.opts.Clock.Now()
	own.mu.Lock()
	epoch := own.core.Epoch()
	own.mu.Unlock()
	for _, in := range r.informerList() {
		in.proofMu.Lock()
		in.wireMu.Lock()
		old.mu.Lock()
		in.proof.Reset(in.env(old, now), epoch)
		old.mu.Unlock()
		in.wireMu.Unlock()
		in.proofMu.Unlock()
	}
	return own
}

// learnedSpace returns the space a resource found foreign to its space
// moves to (see split): the first learnt one it never left, or a new one,
// learnt, named after it. The caller holds mu.
func (m *Monitor) learnedSpace(resource string) *space {
	for _, s := range m.learned {
		if !slices.Contains(m.left[resource], s) {
			return s
		}
	}
	name := resource
	for n := 2; m.spaces[name] != nil; n++ {
		name = fmt.Sprintf("%s-%d", resource, n)
	}
	s := m.space(name)
	m.learned = append(m.learned, s)
	return s
}

// resource returns a resource already watched.
func (m *Monitor) tracked(gvr schema.GroupVersionResource) (*resource, error) {
	name := resourceName(gvr.GroupResource())
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.resources[name]
	if !ok {
		return nil, fmt.Errorf("%s is not watched by this monitor: create its informer first", name)
	}
	return r, nil
}

// resourceOf returns the resource named name, or nil.
func (m *Monitor) resourceOf(name string) *resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resources[name]
}

// freshenWith gives an informer its freshness read, on its own connection
// (own) or another, unless Options.NoFreshnessReads turned the reads off:
// then none runs, and no proof may count on one.
func (m *Monitor) freshenWith(in *informer, read headFunc, own bool) {
	if m.opts.NoFreshnessReads {
		return
	}
	in.setHook(func(h *informerHooks) { h.freshen, h.ownReads = read, own })
	// a read moves the watch's cache only on the watch's own connection
	// (another may reach another API server)
	in.wireMu.Lock()
	in.wire.SetReads(read != nil && own)
	in.wireMu.Unlock()
}

// instrument wraps the ListerWatcher of one more informer of r so that
// everything it lists and watches is measured.
func (m *Monitor) instrument(r *resource, lw cache.ListerWatcher) *listerWatcher {
	return m.wrap(r.newInformer(), lw)
}

// wrap instruments lw for the informer whose state is in.
func (m *Monitor) wrap(in *informer, lw cache.ListerWatcher) *listerWatcher {
	return &listerWatcher{inner: cache.ToListerWatcherWithContext(lw), state: in, noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw)}
}

// Start probes the head of every RV space each probe interval, drains what
// informers' stores applied without telling a handler (bookmarks, list
// ends) once a second, and makes quiet resources' bookmarks prove
// freshness (see freshen), until ctx ends; it makes the Monitor a
// controller-runtime manager.Runnable. Spaces that gain their first head
// source later (informers created on demand, as a controller-runtime cache
// does) start being probed within one interval. Without Options.HeadProbe
// only the draining and the freshness reads of informers built by
// NewInformer run.
func (m *Monitor) Start(ctx context.Context) error {
	if _, err := m.head(); err != nil {
		return fmt.Errorf("head probe client: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[*space]bool{}
	tick := m.opts.Clock.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		if i%int(max(1, m.opts.ProbeInterval/time.Second)) == 0 {
			for _, s := range m.probedSpaces() {
				if started[s] {
					continue
				}
				started[s] = true
				wg.Go(func() {
					wait.JitterUntilWithContext(ctx, func(ctx context.Context) { m.probe(ctx, s, &wg) }, m.opts.ProbeInterval, 0.1, true)
				})
			}
		}
		m.drainStores()
		if !m.opts.NoFreshnessReads {
			m.freshen(ctx, &wg)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-tick.C():
		}
	}
}

// drainStores drains, for every informer, what its store applied without
// telling a handler (bookmarks, list ends), so that a quiet resource's
// bookmark proves freshness without waiting for a notification.
func (m *Monitor) drainStores() {
	for _, r := range m.resourceList() {
		for _, in := range r.informerList() {
			in.drainStore()
		}
	}
}

// resourceList returns the resources, sorted by name.
func (m *Monitor) resourceList() []*resource {
	m.mu.Lock()
	rs := make([]*resource, 0, len(m.resources))
	for _, r := range m.resources {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	slices.SortFunc(rs, func(a, b *resource) int { return strings.Compare(a.name, b.name) })
	return rs
}

// freshen makes the next bookmark of every quiet informer prove freshness.
// A bookmark carries the resource version of the API server's watch cache,
// which for a resource nobody writes advances only when etcd sends a
// progress notification (every 5s on kubeadm, every 10 minutes by etcd's
// default). A consistent read of the resource, on the informer's own
// connection (so it reaches the informer's API server), makes that watch
// cache catch up with etcd first; sent shortly before the bookmark is due,
// it makes the bookmark carry a current revision. One read per quiet
// informer per bookmark period, none for busy ones (their events prove
// freshness); each read is a head sample too.
func (m *Monitor) freshen(ctx context.Context, wg *sync.WaitGroup) {
	now := m.opts.Clock.Now()
	for _, r := range m.resourceList() {
		for _, in := range r.informerList() {
			if !in.freshenDue(now, proof.FreshenLead) {
				continue
			}
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, proof.FreshenTimeout)
				sent := m.opts.Clock.Now()
				rvs, err := in.hook().freshen(rctx)
				cancel()
				recv := m.opts.Clock.Now()
				var head uint64
				var integer, answered bool
				sp := r.space.Load()
				if src, ok := sp.sourceOf(r.name); ok && (err == nil || ctx.Err() == nil) {
					head, integer, answered = m.sample(sp, src, rvs, err, sent, recv, false)
				} else if err == nil {
					head, integer = proof.ParseRV(rvs)
					answered = true
				}
				in.freshened(head, sent, recv, answered, integer)
			})
		}
	}
}

// probedSpaces returns the spaces that have a head source.
func (m *Monitor) probedSpaces() []*space {
	m.mu.Lock()
	spaces := make([]*space, 0, len(m.spaces))
	for _, s := range m.spaces {
		spaces = append(spaces, s)
	}
	m.mu.Unlock()
	slices.SortFunc(spaces, func(a, b *space) int { return strings.Compare(a.name, b.name) })
	return slices.DeleteFunc(spaces, func(s *space) bool { return !s.probed() })
}

// snapshots returns the state of every resource, sorted by name. It reads
// memory only and never blocks on the API server or a store.
//
// It starts draining what the stores applied without telling a handler, beside the
// scrape, as Start's ticker does: without Start (a library user who only
// registers the collectors) nothing else would, and the queue of a quiet
// resource would grow by one per bookmark (simulation corpus seed 58).
// The drain shows at the next scrape.
func (m *Monitor) snapshots() []snapshot {
	m.drainStores()
	rs := m.resourceList()
	now := m.opts.Clock.Now()
	out := make([]snapshot, 0, len(rs))
	for _, r := range rs {
		if sn, ok := r.snapshot(now); ok {
			out = append(out, sn)
		}
	}
	return out
}
