package probe

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
	"github.com/rvsync-slo/rvsync-slo/exporter/collector"
)

// DefaultSpace is the RV space of every resource not configured otherwise:
// all resources stored in the cluster's main etcd share its revision.
const DefaultSpace = "cluster"

// Options configure a Monitor. Zero values take the defaults.
type Options struct {
	// Clock drives every measurement; tests pass a fake one.
	Clock clock.WithTicker
	// ProbeInterval is the period of each RV space's head probe (default 5s,
	// jittered by up to 10 %).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one head probe (default: the probe interval, at least 5s).
	ProbeTimeout time.Duration
	// TimelineCapacity bounds each RV space's head timeline (default 4096
	// distinct heads: more than 5 h of history at one new head per 5s probe).
	TimelineCapacity int
	// Logger receives the monitor's logs.
	Logger logr.Logger
	// Controller, when set, adds the label controller=<Controller> to every
	// series, telling apart several processes that embed the probe.
	Controller string
	// HeadProbe, when set, is the client configuration of the head probe for
	// resources found through TrackResource (ctrlcache.Instrument, InformerFunc) (it gets
	// its own connection). Off by default for embedded use: without it,
	// lag and staleness are not computed, every other signal is.
	HeadProbe *rest.Config
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
	if o.TimelineCapacity <= 0 {
		o.TimelineCapacity = 4096
	}
}

// Monitor measures how far informer caches trail the API server. It owns
// one Tracker per watched resource and one head probe per RV space, and
// exports everything through the metric catalog.
type Monitor struct {
	opts    Options
	metrics *collector.Metrics
	start   time.Time

	mu       sync.Mutex
	spaces   map[string]*Space
	trackers map[string]*Tracker
	heads    heads
}

// New returns a Monitor with no resources.
func New(opts Options) *Monitor {
	opts.defaults()
	return &Monitor{
		opts:     opts,
		metrics:  collector.NewMetrics(),
		start:    opts.Clock.Now(),
		spaces:   map[string]*Space{},
		trackers: map[string]*Tracker{},
	}
}

// Register registers the monitor's metric families with reg. build, when
// not nil, adds rvsync_build_info.
func (m *Monitor) Register(reg prometheus.Registerer, build *collector.BuildInfo) error {
	if m.opts.Controller != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{catalog.LabelController: m.opts.Controller}, reg)
	}
	return m.metrics.Register(reg, collector.SourceFunc(m.Snapshots), build)
}

// Metrics returns the monitor's event-driven metric vectors.
func (m *Monitor) Metrics() *collector.Metrics { return m.metrics }

func (m *Monitor) space(name string) *Space {
	if name == "" {
		name = DefaultSpace
	}
	s, ok := m.spaces[name]
	if !ok {
		s = &Space{
			name:     name,
			timeline: NewTimeline(m.opts.TimelineCapacity, m.start),
			clock:    m.opts.Clock,
			metrics:  m.metrics,
			log:      m.opts.Logger.WithValues("space", name),
		}
		m.spaces[name] = s
	}
	return s
}

// Track returns the tracker of resource (its `plural.group` label value) in
// RV space space ("" for DefaultSpace), creating it on first use.
func (m *Monitor) Track(resource, space string) *Tracker {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.trackers[resource]; ok {
		return t
	}
	s := m.space(space)
	t := newTracker(resource, m.opts.Clock, s, m.metrics)
	s.addTracker(t)
	m.trackers[resource] = t
	return t
}

// AddHeadSource adds a way to read the head RV of space, through resource.
// A space probes its sources in order and sticks to the first that answers,
// so a forbidden or deleted resource does not blind the space.
func (m *Monitor) AddHeadSource(space, resource string, head HeadFunc) {
	m.mu.Lock()
	s := m.space(space)
	m.mu.Unlock()
	s.addSource(headSource{resource: resource, head: head})
}

// Instrument wraps the ListerWatcher of resource's informer so that
// everything it lists and watches is measured by the resource's tracker.
func (m *Monitor) Instrument(t *Tracker, lw cache.ListerWatcher) cache.ListerWatcher {
	return &listerWatcher{inner: cache.ToListerWatcherWithContext(lw), tracker: t, noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw)}
}

// Run probes the head of every RV space each probe interval until ctx ends.
// Spaces that gain their first head source later (informers created on
// demand, as a controller-runtime cache does) start being probed within one
// interval.
func (m *Monitor) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[*Space]bool{}
	tick := m.opts.Clock.NewTicker(m.opts.ProbeInterval)
	defer tick.Stop()
	for {
		for _, s := range m.probedSpaces() {
			if started[s] {
				continue
			}
			started[s] = true
			wg.Go(func() {
				wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
					s.probe(ctx, m.opts.ProbeTimeout)
				}, m.opts.ProbeInterval, 0.1, true)
			})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// probedSpaces returns the spaces that have a head source.
func (m *Monitor) probedSpaces() []*Space {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Space
	for _, s := range m.spaces {
		s.mu.Lock()
		if len(s.sources) > 0 {
			out = append(out, s)
		}
		s.mu.Unlock()
	}
	return out
}

// Snapshots returns the state of every resource, sorted by name. It reads
// memory only and never blocks on the API server.
func (m *Monitor) Snapshots() []collector.Snapshot {
	m.mu.Lock()
	ts := make([]*Tracker, 0, len(m.trackers))
	for _, t := range m.trackers {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	slices.SortFunc(ts, func(a, b *Tracker) int { return strings.Compare(a.name, b.name) })
	now := m.opts.Clock.Now()
	out := make([]collector.Snapshot, len(ts))
	for i, t := range ts {
		out[i] = t.Snapshot(now)
	}
	return out
}
