package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// Hosts of the exporter's connections. Clients of one host share one
// connection, which the model's balancer pins to one API server.
const (
	HostInformers = "informers" // the exporter's informers and their freshness reads
	HostProbe     = "probe"     // the head probe
	HostCanary    = "canary"    // the canary's writes
	// HostController is an operator's client: its informers, measured
	// through Monitor.Instrument (their freshness reads go through their
	// own ListerWatchers); a namespaced one's host is HostController, "-"
	// and its namespace
	HostController = "ctrl"
)

// Informer is one informer of a watched resource.
type Informer struct {
	// Host names its connection (default HostInformers).
	Host string
	// Embedded: built by the operator's code and measured through
	// Monitor.Instrument (a client-go informer of PartialObjectMetadata, as
	// a controller-runtime cache builds); otherwise the exporter's own,
	// built by Monitor.NewInformer (object digests only). The truth of an
	// embedded informer is read from its store; of the exporter's, from what
	// its connection delivered (its store holds digests only).
	Embedded bool
	// Typed, for an embedded informer: of whole objects (a typed or
	// unstructured informer, as controller-runtime builds for a typed
	// client's reads), not of PartialObjectMetadata; an operator may have
	// both kinds of one resource, each its own watch.
	Typed bool
	// SlowStore makes its store take this long per object it indexes (an
	// indexer that is slow, or starved of CPU): backpressure. An exporter's
	// informer with a slow store has no staleness truth (its store holds
	// digests, and what it consumed is not yet what it holds); its truth
	// is what waits: InformerTruth.Pending.
	SlowStore time.Duration
	// Namespace scopes an embedded informer to one namespace ("": all), as
	// controller-runtime's cache does with DefaultNamespaces: its list and
	// watch, its freshness reads and its truth see that namespace only.
	Namespace string
	// Selector selects an embedded informer's objects by label ("": all;
	// model.ShardLabel=a or =b, half of them), as a cache built with
	// ByObject label selectors does: its list and watch, its freshness
	// reads and its truth see those objects only.
	Selector string
	// Field selects an embedded informer's objects by field ("": all;
	// metadata.name=NAME: the objects of one name, as an operator's cache
	// of one ConfigMap or Secret it reads, built with a field selector):
	// its list and watch, its freshness reads and its truth see those only.
	Field string
	// StartAfter and StopAfter, for an embedded informer: how long after
	// the history began its owner builds and starts it (0: at once), and
	// stops it (0: never), as an operator's controller that starts once
	// it wins its leader election, or stops watching a resource it no
	// longer needs, does. A stopped informer leaves the measurement
	// (Monitor.Instrument) and the truth; so does one not started yet.
	StartAfter, StopAfter time.Duration
	// RestartAfter, for an embedded informer with StopAfter: how long
	// after the history began its owner builds it again on the same
	// connection and starts it (0: never), as an operator does that
	// re-creates a cache (it lost and won its leader election, or its
	// CRD was installed again): a new informer, instrumented anew, that
	// lists from scratch and runs to the history's end.
	RestartAfter time.Duration
}

// scope is what the informer lists and watches.
func (in Informer) scope() model.Scope {
	return model.Scope{Namespace: in.Namespace, Selector: in.Selector, Field: in.Field}
}

// Watched is a resource of the model and how the monitor watches it.
type Watched struct {
	model.ResourceSpec
	// Space is the RV space the exporter is configured with ("": default).
	Space string
	// Informers watch it (default: one exporter informer).
	Informers []Informer
}

// EtcdName is the etcd the resource is stored in: its Etcd, or the main one.
func (w Watched) EtcdName() string {
	if w.Etcd == "" {
		return model.MainEtcd
	}
	return w.Etcd
}

// Cached reports whether kube-apiserver serves the resource from its
// watch cache, and so reports apiserver_watch_cache_resource_version for
// it: not a resource of an extension API server (Opaque), nor one whose
// watches get no bookmarks (the watch cache off for it, or an extension
// API server not built on the cacher).
func (w Watched) Cached() bool { return !w.Opaque && !w.NoBookmarks }

// Name returns the resource's `resource` label value.
func (w Watched) Name() string {
	if w.Group == "" {
		return w.Plural
	}
	return w.Plural + "." + w.Group
}

func (w Watched) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: w.Group, Version: w.Version, Resource: w.Plural}
}

// Setup is the topology of a history and the monitor's configuration.
type Setup struct {
	Servers int
	// Etcds besides the main one (whose spec, if listed, replaces the
	// default: revision 1000, progress notifications every 5s).
	Etcds         []model.EtcdSpec
	Resources     []Watched
	ProbeInterval time.Duration // default 5s
	Scrape        time.Duration // default 15s
	// NoFreshnessReads turns the monitor's freshness reads off.
	NoFreshnessReads bool
	// Canary is the resource the canary writes ("": no canary); its object
	// is rvsync-canary in namespace rvsync.
	Canary string
	// MoreCanaries are further resources a canary writes, each its own
	// object rvsync/rvsync-canary, as the exporter's canary.resources
	// lists several (-sim.widen=canaries).
	MoreCanaries   []string
	CanaryInterval time.Duration // default 10s
	// Pins pins connections (by host) to API servers; the others go
	// round-robin.
	Pins map[string]int
	// DispatchLag: the watch caches' dispatchers trail a progress
	// notification by up to this much (model.Config.DispatchLag; 0: none).
	DispatchLag time.Duration
	// ListLatency: an informer's lists take up to this much longer than
	// the path's latency (model.Config.ListLatency; 0: none).
	ListLatency time.Duration
	// HTTP1: every client speaks HTTP/1.1 (DISABLE_HTTP2, or a proxy that
	// downgrades): each request of a client may take another connection,
	// which the balancer may place on another API server
	// (model.Tx.SetHTTP1); otherwise HTTP/2, one connection per client.
	HTTP1 bool
	// NoStart: the monitor's Start never runs (a library user who
	// registers the collectors but never adds the monitor to a manager):
	// no head probe, no freshness reads, no draining of the stores.
	NoStart bool
	// ServerMetrics: Prometheus scrapes the API servers too (job
	// "apiserver", as kube-prometheus-stack does), and the rules judged
	// see their watch caches' resource versions (Scrape.Servers).
	ServerMetrics bool
}

// canaries returns the resources a canary writes: Canary's, then
// MoreCanaries.
func (s Setup) canaries() []string {
	var out []string
	if s.Canary != "" {
		out = append(out, s.Canary)
	}
	return append(out, s.MoreCanaries...)
}

// canaried reports whether a canary writes resource res.
func (s Setup) canaried(res string) bool { return slices.Contains(s.canaries(), res) }

// canariesOn returns the resources a canary writes that are stored in
// etcd name: only their writes can land below what was read of it.
func (s Setup) canariesOn(etcd string) []string {
	var out []string
	for _, res := range s.canaries() {
		for _, r := range s.Resources {
			if r.Name() == res && r.EtcdName() == etcd {
				out = append(out, res)
			}
		}
	}
	return out
}

func (s *Setup) defaults() {
	if s.ProbeInterval <= 0 {
		s.ProbeInterval = 5 * time.Second
	}
	if s.Scrape <= 0 {
		s.Scrape = 15 * time.Second
	}
	if s.CanaryInterval <= 0 {
		s.CanaryInterval = 10 * time.Second
	}
	for i := range s.Resources {
		if len(s.Resources[i].Informers) == 0 {
			s.Resources[i].Informers = []Informer{{}}
		}
		for j := range s.Resources[i].Informers {
			if s.Resources[i].Informers[j].Host == "" {
				s.Resources[i].Informers[j].Host = HostInformers
			}
		}
	}
}

// Canary object of the monitor's canary.
const (
	CanaryNamespace = "rvsync"
	CanaryName      = "rvsync-canary"
)

// LoadNamespace holds the objects the loads write.
const LoadNamespace = "ns"

// Scrape is one scrape of the monitor, with the model's truth at that
// instant.
type Scrape struct {
	At       time.Time
	Families []*dto.MetricFamily
	Truth    map[string]ResourceTruth // by resource
	// Servers: what each API server's /metrics said, when
	// Setup.ServerMetrics (nil otherwise).
	Servers []ServerScrape
	// Routes: by host, the API servers its connections were placed on
	// (model.Tx.Routes): whose faults its requests and watches meet.
	Routes map[string][]int
}

// ServerScrape is what one API server's /metrics said at a scrape: its
// watch caches' resource versions (apiserver_watch_cache_resource_version)
// by resource name; Up false: the scrape failed (the server is down).
type ServerScrape struct {
	Instance string
	Up       bool
	CacheRV  map[string]uint64
}

// serverInstance is the instance label of API server i's scrape.
func serverInstance(i int) string { return fmt.Sprintf("apiserver-%d:6443", i) }

// ResourceTruth is what is true of a watched resource at a scrape.
type ResourceTruth struct {
	// Exists: the API serves the resource (a CRD not deleted).
	Exists bool
	// CachesLost: some watch cache of a resource of its etcd serves a
	// history etcd lost: reads of the etcd's head may come from it.
	CachesLost bool
	// CachesTainted: some watch cache of a resource of its etcd ran
	// through a restore and holds objects of the lost history.
	CachesTainted bool
	Informers     []InformerTruth
}

// InformerTruth is what is true of one informer at a scrape.
type InformerTruth struct {
	Host string
	// Fresh is the newest instant by which its store held every committed
	// write of the resource (in etcd's current history); Missing counts the
	// changes it lacks.
	Fresh   time.Time
	Missing int
	// Reverted: the oldest change it lacks is a restore's.
	Reverted bool
	// Live: its watch is open on a server that is up, over a connection
	// that is not frozen; Bookmarks: that watch gets bookmarks (its
	// server sends them, and its watch cache moved past the revision it
	// started from); Waiting: it is live but its server sends it nothing
	// until its watch cache moves past that revision (model.Tx.Waiting).
	Live, Bookmarks, Waiting bool
	// ResumedAbove: its watch is open from a revision its watch cache has
	// not reached (not live): its server sends it nothing and ends its
	// sessions on time (model.Tx.ResumedAbove).
	ResumedAbove bool
	// LostHistory: the watch cache serving it holds a history etcd lost (a
	// restore its API server has not seen): its RV is of another history.
	LostHistory bool
	// Following: the watch cache serving it follows etcd without delay;
	// Stuck: it stopped following etcd altogether.
	Following, Stuck bool
	// Disrupted is when its path (connection, server, watch cache) was last
	// disrupted; WatchOpened, when its live watch opened (zero: not live).
	Disrupted, WatchOpened time.Time
	// Last is when it last consumed anything; RV, the revision of it.
	Last time.Time
	RV   uint64
	// ListedAt is when it last completed a list; ListTaken, when that
	// list's snapshot was taken; ListInLoss and ListTainted, what the
	// watch caches of its etcd were when it completed (model.View).
	ListedAt, ListTaken     time.Time
	ListInLoss, ListTainted bool
	// Pending counts the watch events it consumed that its store has not
	// applied yet (its handlers not yet told), and AppliedRV is the
	// revision of the last one applied: the truth of its queue, for an
	// informer with a slow store (counted from its notifications, so only
	// until its first relist).
	Pending   int
	AppliedRV uint64
}

// listedBy takes what the informer's view of its connection says of its
// consumption and its latest list.
func (it *InformerTruth) listedBy(v *model.View) {
	it.Last, it.RV = v.Last, v.RV
	it.ListedAt, it.ListTaken, it.ListInLoss, it.ListTainted = v.ListedAt, v.ListTaken, v.ListInLoss, v.ListTainted
}

// World runs one history: the model control plane, the monitor under test
// wired as the exporter (or an operator) wires it, the workload and the
// faults, and a scrape with the truth every scrape interval.
type World struct {
	Setup   Setup
	Cluster *model.Cluster
	Monitor *probe.Monitor
	reg     *prometheus.Registry
	Start   time.Time
	// Informers are the informers of each resource, in Setup's order.
	// Informers holds, by resource, its informers in the order of its
	// Watched.Informers: nil for one not started yet. The truth holds those
	// that run and completed a list.
	Informers map[string][]cache.SharedIndexInformer
	notified  map[cache.SharedIndexInformer]*atomic.Int64
	stopped   map[cache.SharedIndexInformer]bool
	// launched holds when each informer was started (a restarted one's
	// connection holds the list of the one before it)
	launched map[cache.SharedIndexInformer]time.Time
	ctx      context.Context
	wg       *sync.WaitGroup
	// OnScrape, when set, is called with every scrape (inside the bubble).
	OnScrape func(Scrape)
	scrapes  int
	err      error
}

// Run runs setup for dur inside a synctest bubble of t: script is called
// at the start, with the model built, to schedule the workload and the
// faults on the cluster (Cluster.At); onScrape gets every scrape. It
// returns when the history ends and every goroutine of it has.
func Run(t *testing.T, setup Setup, seed uint64, dur time.Duration, script func(w *World), onScrape func(Scrape)) error {
	var err error
	synctest.Test(t, func(*testing.T) {
		err = runBubble(setup, seed, dur, script, onScrape)
	})
	return err
}

func runBubble(setup Setup, seed uint64, dur time.Duration, script func(w *World), onScrape func(Scrape)) error {
	setup.defaults()
	c := model.New(model.Config{Seed: seed, Servers: max(1, setup.Servers), DispatchLag: setup.DispatchLag, ListLatency: setup.ListLatency})
	main := model.EtcdSpec{Name: model.MainEtcd, Revision: 1000, ProgressNotify: 5 * time.Second}
	for _, e := range setup.Etcds {
		if e.Name == model.MainEtcd {
			main = e
			continue
		}
		c.AddEtcd(e)
	}
	c.AddEtcd(main)
	for _, r := range setup.Resources {
		c.AddResource(r.ResourceSpec)
	}
	c.Do(func(tx *model.Tx) {
		for _, res := range setup.canaries() {
			tx.Create(res, CanaryNamespace, CanaryName, nil)
		}
		if setup.HTTP1 {
			for _, host := range []string{HostInformers, HostProbe, HostCanary, HostController} {
				tx.SetHTTP1(host, true)
			}
		}
		for host, server := range setup.Pins {
			tx.Pin(host, server)
		}
	})
	w := &World{Setup: setup, Cluster: c, Start: time.Now(), OnScrape: onScrape, Informers: map[string][]cache.SharedIndexInformer{}, notified: map[cache.SharedIndexInformer]*atomic.Int64{}, stopped: map[cache.SharedIndexInformer]bool{}, launched: map[cache.SharedIndexInformer]time.Time{}}
	w.Monitor = probe.New(probe.Options{HeadProbe: w.config(HostProbe), ProbeInterval: setup.ProbeInterval, NoFreshnessReads: setup.NoFreshnessReads, Logger: monitorLog})
	w.reg = prometheus.NewRegistry()
	if err := w.Monitor.Register(w.reg); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	w.ctx, w.wg = ctx, &wg
	// Each part starts alone, a millisecond after the one before, once
	// that one waits: the global random source they draw jitter from is
	// then read in the same order every run (see determinism_test.go).
	start := func(f func()) {
		wg.Go(f)
		synctest.Wait()
		time.Sleep(time.Millisecond)
	}
	// launch builds the i-th informer of r and starts it, to run until its
	// StopAfter (lifecycle holds the stop, and then its restart) or the
	// history's end; again: it is the restart, which runs to the end
	var lifecycle []lifecycleEvent
	schedule := func(e lifecycleEvent) {
		i, _ := slices.BinarySearchFunc(lifecycle, e.at, func(a lifecycleEvent, at time.Time) int { return a.at.Compare(at) })
		for i < len(lifecycle) && lifecycle[i].at.Equal(e.at) {
			i++ // after those due at the same instant: in the order scheduled
		}
		lifecycle = slices.Insert(lifecycle, i, e)
	}
	var launch func(r Watched, i int, again bool) error
	launch = func(r Watched, i int, again bool) error {
		in := r.Informers[i]
		inf, err := w.informer(r, in)
		if err != nil {
			return err
		}
		w.Informers[r.Name()][i] = inf
		n := &atomic.Int64{}
		w.notified[inf] = n
		w.launched[inf] = time.Now()
		count := func(initial bool) {
			if !initial {
				n.Add(1)
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(_ any, initial bool) { count(initial) },
			UpdateFunc: func(_, _ any) { count(false) },
			DeleteFunc: func(any) { count(false) },
		})
		ictx, stop := context.WithCancel(ctx)
		if in.StopAfter > 0 && !again {
			schedule(lifecycleEvent{at: w.Start.Add(in.StopAfter), do: func() error {
				stop()
				w.stopped[inf] = true
				synctest.Wait()
				if in.RestartAfter > in.StopAfter {
					schedule(lifecycleEvent{at: w.Start.Add(in.RestartAfter), do: func() error { return launch(r, i, true) }})
				}
				return nil
			}})
		}
		start(func() { defer stop(); inf.RunWithContext(ictx) })
		return nil
	}
	for _, r := range setup.Resources {
		w.Informers[r.Name()] = make([]cache.SharedIndexInformer, len(r.Informers))
		for i, in := range r.Informers {
			if in.StartAfter > 0 {
				schedule(lifecycleEvent{at: w.Start.Add(in.StartAfter), do: func() error { return launch(r, i, false) }})
				continue
			}
			if err := launch(r, i, false); err != nil {
				cancel()
				wg.Wait()
				return err
			}
		}
	}
	for _, res := range setup.canaries() {
		r := w.watched(res)
		canary, err := w.Monitor.NewCanary(w.config(HostCanary), probe.CanaryOptions{
			GVR: r.gvr(), Kind: r.Kind, Namespace: CanaryNamespace, Name: CanaryName, Interval: setup.CanaryInterval,
		})
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		start(func() { canary.Run(ctx) })
	}
	if !setup.NoStart {
		start(func() { _ = w.Monitor.Start(ctx) })
	}
	if script != nil {
		script(w)
	}
	end := w.Start.Add(dur)
	next := w.Start.Add(setup.Scrape)
	for {
		at, ok := c.Next()
		if !ok || at.After(next) {
			at = next
		}
		if len(lifecycle) > 0 && lifecycle[0].at.Before(at) {
			at = lifecycle[0].at
		}
		if at.After(end) {
			break
		}
		time.Sleep(time.Until(at))
		c.Advance()
		for len(lifecycle) > 0 && !time.Now().Before(lifecycle[0].at) {
			e := lifecycle[0]
			lifecycle = lifecycle[1:]
			if err := e.do(); err != nil && w.err == nil {
				w.err = err
			}
		}
		if !time.Now().Before(next) {
			synctest.Wait()
			w.scrape()
			next = next.Add(setup.Scrape)
		}
	}
	cancel()
	synctest.Wait()
	c.Close()
	wg.Wait()
	return w.err
}

// lifecycleEvent is an embedded informer's start or stop, due at at.
type lifecycleEvent struct {
	at time.Time
	do func() error
}

// running reports whether the i-th informer of r runs: started, and not
// stopped.
func (w *World) running(r Watched, i int) bool {
	inf := w.Informers[r.Name()][i]
	return inf != nil && !w.stopped[inf]
}

// monitorLog receives the monitor's logs (TestSeed's -sim.v sets it; a
// discarding logger otherwise): its traces at verbosity 2 say what each head
// sample and canary write meant.
var monitorLog = logr.Discard()

// Go runs f in the history's bubble, as a client of the model would (f may
// sleep and make requests); ctx ends with the history, which waits for f.
func (w *World) Go(f func(ctx context.Context)) { w.wg.Go(func() { f(w.ctx) }) }

// Config returns the client configuration of a connection to the model.
func (w *World) Config(host string) *rest.Config { return w.config(host) }

// config returns the client configuration of a connection to the model.
func (w *World) config(host string) *rest.Config {
	return &rest.Config{Host: "https://" + host, Transport: w.Cluster.Transport(), QPS: -1}
}

func (w *World) watched(name string) Watched {
	for _, r := range w.Setup.Resources {
		if r.Name() == name {
			return r
		}
	}
	panic("sim: no watched resource " + name)
}

// informer builds one informer of r the way its owner does.
func (w *World) informer(r Watched, in Informer) (cache.SharedIndexInformer, error) {
	cfg := w.config(in.Host)
	slow := func(any) ([]string, error) {
		time.Sleep(in.SlowStore)
		return nil, nil
	}
	if !in.Embedded {
		res := probe.Resource{GVR: r.gvr(), Space: r.Space}
		if r.Generations {
			res.ObservedGenerationPath = "status.observedGeneration"
		}
		inf, err := w.Monitor.NewInformer(cfg, res)
		if err == nil && in.SlowStore > 0 {
			err = inf.AddIndexers(cache.Indexers{"slow": slow})
		}
		return inf, err
	}
	lw, example, err := embeddedListWatch(cfg, r.gvr(), in)
	if err != nil {
		return nil, err
	}
	indexers := cache.Indexers{}
	if in.SlowStore > 0 {
		indexers["slow"] = slow
	}
	return w.Monitor.Instrument(r.gvr(), lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, example, 0, indexers)
	}), nil
}

// embeddedListWatch is the ListerWatcher of an operator's informer of gvr
// in its scope (a metadata or, Typed, a dynamic client's, as
// controller-runtime's caches build them) and the object it lists.
func embeddedListWatch(cfg *rest.Config, gvr schema.GroupVersionResource, in Informer) (cache.ListerWatcher, runtime.Object, error) {
	type lister interface {
		List(context.Context, metav1.ListOptions) (runtime.Object, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	}
	var res lister
	var example runtime.Object
	var client any
	if in.Typed {
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		var ri dynamic.ResourceInterface = dc.Resource(gvr)
		if in.Namespace != "" {
			ri = dc.Resource(gvr).Namespace(in.Namespace)
		}
		res, example, client = dynamicLister{ri}, &unstructured.Unstructured{}, dc
	} else {
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		var ri metadata.ResourceInterface = mc.Resource(gvr)
		if in.Namespace != "" {
			ri = mc.Resource(gvr).Namespace(in.Namespace)
		}
		res, example, client = metadataLister{ri}, &metav1.PartialObjectMetadata{}, mc
	}
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = in.Selector, in.Field
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = in.Selector, in.Field
			return res.Watch(ctx, o)
		},
	}, client)
	return lw, example, nil
}

// metadataLister and dynamicLister list and watch through a metadata or a
// dynamic client.
type (
	metadataLister struct{ metadata.ResourceInterface }
	dynamicLister  struct{ dynamic.ResourceInterface }
)

func (l metadataLister) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return l.ResourceInterface.List(ctx, o)
}

func (l dynamicLister) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return l.ResourceInterface.List(ctx, o)
}

// storeView reads an embedded informer's store: each key at its resource
// version.
func storeView(inf cache.SharedIndexInformer) map[string]string {
	held := map[string]string{}
	for _, o := range inf.GetStore().List() {
		if m, ok := o.(metav1.Object); ok {
			key := m.GetName()
			if m.GetNamespace() != "" {
				key = m.GetNamespace() + "/" + key
			}
			held[key] = m.GetResourceVersion()
		}
	}
	return held
}

// scrape gathers the monitor's metrics and the truth at this instant.
func (w *World) scrape() {
	mfs, err := w.reg.Gather()
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("scrape at %v: %w", w.Since(), err)
	}
	s := Scrape{At: time.Now(), Families: mfs, Truth: map[string]ResourceTruth{}}
	stores := map[string][]map[string]string{}
	for _, r := range w.Setup.Resources {
		for i, in := range r.Informers {
			var held map[string]string
			if in.Embedded && w.running(r, i) {
				held = storeView(w.Informers[r.Name()][i])
			}
			stores[r.Name()] = append(stores[r.Name()], held)
		}
	}
	w.Cluster.Do(func(tx *model.Tx) {
		s.Routes = tx.Routes()
		if w.Setup.ServerMetrics {
			for i := range tx.Servers() {
				ss := ServerScrape{Instance: serverInstance(i), Up: tx.Up(i)}
				if ss.Up {
					ss.CacheRV = map[string]uint64{}
					for _, r := range w.Setup.Resources {
						if rv := tx.CacheRV(i, r.Name()); rv != 0 && r.Cached() {
							ss.CacheRV[r.Name()] = rv
						}
					}
				}
				s.Servers = append(s.Servers, ss)
			}
		}
		for _, r := range w.Setup.Resources {
			etcd := r.EtcdName()
			rt := ResourceTruth{Exists: tx.Exists(r.Name()), CachesLost: tx.CachesLost(etcd), CachesTainted: tx.CachesTainted(etcd)}
			for i, in := range r.Informers {
				if !w.running(r, i) {
					continue // not in the measurement: not started yet, or stopped
				}
				if v := tx.View(in.Host, r.Name()); v == nil || !v.Listed || v.ListedAt.Before(w.launched[w.Informers[r.Name()][i]]) {
					// nor before its first list completes: its owner reads
					// it only once it synced (the resource says so:
					// rvsync_informer_synced 0); a restarted informer's
					// connection holds its predecessor's list until then
					continue
				}
				it := InformerTruth{Host: in.Host, Fresh: s.At}
				if in.Embedded {
					it.Fresh, it.Missing, it.Reverted = tx.Fresh(tx.StoreView(r.Name(), in.scope(), stores[r.Name()][i]), s.At)
					if v := tx.View(in.Host, r.Name()); v != nil {
						it.listedBy(v)
					}
				} else if v := tx.View(in.Host, r.Name()); v != nil {
					it.listedBy(v)
					it.Fresh, it.Missing, it.Reverted = tx.Fresh(v, s.At)
				} else {
					it.Fresh, it.Missing, it.Reverted = tx.Fresh(&model.View{Resource: r.Name()}, s.At)
				}
				it.Live, it.Bookmarks = tx.Live(in.Host, r.Name())
				it.Waiting = tx.Waiting(in.Host, r.Name())
				it.ResumedAbove = tx.ResumedAbove(in.Host, r.Name())
				it.LostHistory = tx.LostHistory(in.Host, r.Name())
				it.Following, it.Stuck = tx.Following(in.Host, r.Name()), tx.Stuck(in.Host, r.Name())
				it.Disrupted, it.WatchOpened = tx.Disrupted(in.Host, r.Name()), tx.WatchOpened(in.Host, r.Name())
				if v := tx.View(in.Host, r.Name()); v != nil && in.SlowStore > 0 {
					n := int(w.notified[w.Informers[r.Name()][i]].Load())
					it.Pending = max(0, len(v.Events)-n)
					if n > 0 && n <= len(v.Events) {
						it.AppliedRV = v.Events[n-1]
					}
				}
				rt.Informers = append(rt.Informers, it)
			}
			s.Truth[r.Name()] = rt
		}
	})
	w.scrapes++
	if w.OnScrape != nil {
		w.OnScrape(s)
	}
}

// Since returns the simulated time since the history began.
func (w *World) Since() time.Duration { return time.Since(w.Start) }

// Value returns the value of the series of family name with the given
// label values (name=value pairs), and whether it exists.
func Value(mfs []*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// Dump renders a scrape's rvsync gauges of resource res, for a failure.
func Dump(s Scrape, res string) string {
	var out []string
	for _, mf := range s.Families {
		for _, m := range mf.GetMetric() {
			var match bool
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "resource" && lp.GetValue() == res {
					match = true
				}
			}
			if !match || m.Gauge == nil {
				continue
			}
			var ls []string
			for _, lp := range m.GetLabel() {
				if lp.GetName() != "resource" {
					ls = append(ls, lp.GetName()+"="+lp.GetValue())
				}
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", strings.TrimPrefix(mf.GetName(), "rvsync_"), strings.Join(ls, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
