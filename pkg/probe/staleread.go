package probe

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// StaleReadOptions configure the sampled stale-read check (see StaleReads).
// Zero values take the defaults.
type StaleReadOptions struct {
	// Fraction of reconciles whose cache reads are checked, in (0, 1];
	// default 0.01. The choice is per reconcile: every read of a sampled
	// reconcile is checked, no read of another one.
	Fraction float64
	// ReadsPerSecond is the hard limit on live reads: a token bucket
	// refilled at this rate (default 1). A sampled read finding it empty is
	// not checked (counted as rate_limited). Whatever the reconcile rate,
	// the check never makes more than ReadsPerSecond × t + Burst live reads
	// in any t seconds.
	ReadsPerSecond float64
	// Burst is the token bucket's size (default 1).
	Burst int
	// Timeout bounds one live read (default 5s); a read that times out is
	// counted as an error and the reconcile goes on with its cache read.
	Timeout time.Duration
	// Config is the client configuration of the live reads, which always
	// get a connection of their own (a stuck informer connection must not
	// slow them down or make them agree with the cache). Default: the
	// monitor's Options.HeadProbe, else the configuration passed to
	// Monitor.StaleReads.
	Config *rest.Config
}

func (o *StaleReadOptions) defaults() error {
	switch {
	case math.IsNaN(o.Fraction) || o.Fraction < 0 || o.Fraction > 1:
		return fmt.Errorf("stale reads: fraction %v must be in (0, 1], e.g. 0.01 to check one reconcile in a hundred", o.Fraction)
	case math.IsNaN(o.ReadsPerSecond) || math.IsInf(o.ReadsPerSecond, 0) || o.ReadsPerSecond < 0:
		return fmt.Errorf("stale reads: readsPerSecond %v must be a positive number, e.g. 1", o.ReadsPerSecond)
	case o.Burst < 0:
		return fmt.Errorf("stale reads: burst %d must be positive, e.g. 1", o.Burst)
	case o.Timeout < 0:
		return fmt.Errorf("stale reads: timeout %v must be positive, e.g. 5s", o.Timeout)
	}
	if o.Fraction == 0 {
		o.Fraction = 0.01
	}
	if o.ReadsPerSecond == 0 {
		o.ReadsPerSecond = 1
	}
	if o.Burst == 0 {
		o.Burst = 1
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	return nil
}

// StaleReads answers the question operator authors ask first: did a
// reconcile act on a stale object? For a sampled share of reconciles, each
// read of the informer cache is preceded by a consistent live read of the
// same object (a metadata-only GET, on a connection of its own), and the
// two are compared: another UID live (replaced), deleted live but cached
// (deleted_live), live but not cached (missing), or the cache's resource
// version below the live one (rv_behind). The live read comes first, so a
// difference is proof: the cache, when read, lacked a change committed
// before the live read answered. A write landing between the two reads
// makes the cache newer, never stale.
//
// For an rv_behind read, how far behind it was: from the commit of the
// live version, bounded by the head timeline when the monitor probes the
// resource's RV space (a lower bound, resolution the probe interval), to
// the cache read. For a read of the object the reconcile was triggered
// for, the delay from the informer's delivery of the version read into the
// cache to the read.
//
// Unsampled reconciles pay one hash of their reconcile ID per read; the
// informers of a monitor with stale-read checks keep a bounded record of
// their recent deliveries (64 KiB each). Build it with Monitor.StaleReads;
// package ctrlstale hooks it into a controller-runtime manager.
type StaleReads struct {
	m       *Monitor
	opts    StaleReadOptions
	cut     uint64 // a reconcile whose ID hashes below cut is sampled
	all     bool   // Fraction 1: every reconcile
	limiter *rate.Limiter
	live    metadata.Interface

	mu  sync.Mutex
	obs map[string]*staleObservers
}

// staleObservers are one resource's series, bound once.
type staleObservers struct {
	checked, failed, limited prometheus.Counter
	reasons                  map[string]prometheus.Counter
	behind, delay            prometheus.Observer
}

// StaleReads turns on the sampled stale-read check (see StaleReads). cfg is
// the client configuration of the live reads when neither
// opts.Config nor Options.HeadProbe is set. The informers of the monitor
// start recording their deliveries from now on.
func (m *Monitor) StaleReads(opts StaleReadOptions, cfg *rest.Config) (*StaleReads, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if opts.Config == nil {
		opts.Config = m.opts.HeadProbe
	}
	if opts.Config == nil {
		opts.Config = cfg
	}
	if opts.Config == nil {
		return nil, fmt.Errorf("stale reads: no client configuration for the live reads")
	}
	live, err := metadata.NewForConfig(ownConnection(opts.Config))
	if err != nil {
		return nil, fmt.Errorf("stale reads: live-read client: %w", err)
	}
	c := &StaleReads{
		m:       m,
		opts:    opts,
		all:     opts.Fraction >= 1,
		cut:     uint64(opts.Fraction * (1 << 64)),
		limiter: rate.NewLimiter(rate.Limit(opts.ReadsPerSecond), opts.Burst),
		live:    live,
		obs:     map[string]*staleObservers{},
	}
	m.mu.Lock()
	m.recordDeliveries = true
	for _, r := range m.resources {
		r.recordDeliveries.Store(true)
	}
	m.mu.Unlock()
	return c, nil
}

// Sampled reports whether the reconcile with the given ID (unique per
// reconcile, e.g. controller-runtime's reconcile ID) is sampled: its FNV-1a
// hash falls in the sampled fraction, so every read of one reconcile gets
// the same answer. It does not allocate.
func (c *StaleReads) Sampled(reconcileID string) bool {
	if c.all {
		return reconcileID != ""
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(reconcileID); i++ {
		h ^= uint64(reconcileID[i])
		h *= 1099511628211
	}
	return reconcileID != "" && h < c.cut
}

// StaleRead names one cache read of a sampled reconcile.
type StaleRead struct {
	// GVR is the resource of the object read; Namespace ("" for a
	// cluster-scoped object) and Name identify it.
	GVR             schema.GroupVersionResource
	Namespace, Name string
	// Trigger says the reconcile was triggered for this object: the read
	// then also records the delay from the cache update to the read.
	Trigger bool
}

// Check performs one cache read of a sampled reconcile: a live read of r
// first (when the token bucket allows), then read, the cache read, which
// returns the object or an error (NotFound when the cache has none). It
// compares the two, records the outcome under r's resource and returns
// read's error. A cache read failing otherwise is not judged.
func (c *StaleReads) Check(ctx context.Context, r StaleRead, read func() (metav1.Object, error)) error {
	clk := c.m.opts.Clock
	called := clk.Now()
	resource := resourceName(r.GVR.GroupResource())
	obs := c.observers(resource)
	if !c.limiter.AllowN(called, 1) {
		obs.limited.Inc()
		cached, err := read()
		c.observeDelay(obs, resource, r, cached, err, called)
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	live, liveRV, liveErr := c.liveRead(lctx, r)
	cancel()
	liveAt := clk.Now()
	cached, err := read()
	c.observeDelay(obs, resource, r, cached, err, called)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if liveErr != nil {
		obs.failed.Inc()
		c.m.opts.Logger.V(1).Info("stale-read check: live read failed", "resource", resource, "namespace", r.Namespace, "name", r.Name, "err", liveErr)
		return err
	}
	obs.checked.Inc()
	if err != nil {
		cached = nil
	}
	var applied uint64
	res := c.m.resourceOf(resource)
	if res != nil {
		applied = res.appliedRV()
	}
	reason, behindRV := staleReason(cached, live, liveRV, applied)
	if reason == "" {
		return err
	}
	obs.reasons[reason].Inc()
	if reason == catalog.StaleRVBehind && res != nil {
		sp := res.space.Load()
		sp.mu.Lock()
		commit, ok := proof.CommittedBy(sp.core, behindRV, liveAt, liveAt)
		sp.mu.Unlock()
		if ok {
			obs.behind.Observe(max(0, liveAt.Sub(commit).Seconds()))
		}
	}
	return err
}

// liveRead reads the object r names consistently, as a list of it (field
// selector metadata.name): the list's resource version is the head at the
// read, which tells whether a cache read that differs is older or newer. It
// returns the object (nil when absent) and that head (0: not an integer).
func (c *StaleReads) liveRead(ctx context.Context, r StaleRead) (metav1.Object, uint64, error) {
	list, err := c.live.Resource(r.GVR).Namespace(r.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + r.Name})
	if err != nil {
		return nil, 0, err
	}
	head, _ := proof.ParseRV(list.GetResourceVersion())
	for i := range list.Items {
		if o := &list.Items[i]; o.GetName() == r.Name {
			return o, head, nil
		}
	}
	return nil, head, nil
}

// staleReason compares a cache read with the consistent live read made
// before it (live nil for an object that is absent; head, the head at the
// live read, 0 when unknown) and says how the cache was stale, "" when it
// was not; for rv_behind it returns the live resource version. applied is
// the highest RV the resource's informers hold. A cache newer than the live
// read is fresh, never stale: a write landed between the two reads (an
// object the cache holds above the live read's head was written after it;
// an object the cache lacks although it holds the live version was deleted
// after it).
func staleReason(cached, live metav1.Object, head, applied uint64) (string, uint64) {
	var c, l uint64
	var okC, okL bool
	if cached != nil {
		c, okC = proof.ParseRV(cached.GetResourceVersion())
	}
	if live != nil {
		l, okL = proof.ParseRV(live.GetResourceVersion())
	}
	newer := okC && head != 0 && c > head
	switch {
	case cached == nil && live == nil:
		return "", 0
	case live == nil:
		if newer {
			return "", 0
		}
		return catalog.StaleDeletedLive, 0
	case cached == nil:
		if okL && applied >= l {
			return "", 0
		}
		return catalog.StaleMissing, 0
	case cached.GetUID() != live.GetUID():
		if newer {
			return "", 0
		}
		return catalog.StaleReplaced, 0
	}
	// resource versions that are not integers (extension API servers)
	// cannot be ordered: only identity is judged
	if okC && okL && c < l {
		return catalog.StaleRVBehind, l
	}
	return "", 0
}

// observeDelay records, for a read of the object the reconcile was
// triggered for, the delay from the delivery of the version read into the
// cache to called, when the read was asked for. A version delivered after
// called (during the live read) is left out: at called, the reconcile would
// have read an older one.
func (c *StaleReads) observeDelay(obs *staleObservers, resource string, r StaleRead, cached metav1.Object, err error, called time.Time) {
	if !r.Trigger || err != nil || cached == nil {
		return
	}
	rv, ok := proof.ParseRV(cached.GetResourceVersion())
	res := c.m.resourceOf(resource)
	if !ok || res == nil {
		return
	}
	if at, ok := res.deliveredAt(keyHash(cached.GetNamespace(), cached.GetName()), rv); ok && !at.After(called) {
		obs.delay.Observe(called.Sub(at).Seconds())
	}
}

// observers returns the series of resource, creating them, with every
// result and reason at 0, on its first check.
func (c *StaleReads) observers(resource string) *staleObservers {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.obs[resource]; ok {
		return o
	}
	mt := c.m.metrics
	o := &staleObservers{
		checked: mt.StaleReadChecks.WithLabelValues(resource, catalog.ResultSuccess),
		failed:  mt.StaleReadChecks.WithLabelValues(resource, catalog.ResultError),
		limited: mt.StaleReadChecks.WithLabelValues(resource, catalog.ResultRateLimited),
		reasons: map[string]prometheus.Counter{},
		behind:  mt.StaleReadBehind.WithLabelValues(resource),
		delay:   mt.ReconcileReadDelay.WithLabelValues(resource),
	}
	for _, reason := range catalog.StaleReasons() {
		o.reasons[reason] = mt.StaleReads.WithLabelValues(resource, reason)
	}
	c.obs[resource] = o
	return o
}

// appliedRV returns the highest RV the resource's informers' stores hold.
func (r *resource) appliedRV() uint64 {
	var rv uint64
	for _, in := range r.informerList() {
		in.proofMu.Lock()
		rv = max(rv, in.proof.RV())
		in.proofMu.Unlock()
	}
	return rv
}

// deliveredAt returns when an informer of the resource applied the version
// rv of the object with key hash key to its store (the latest such
// delivery, if several informers did).
func (r *resource) deliveredAt(key, rv uint64) (time.Time, bool) {
	var at time.Time
	found := false
	for _, in := range r.informerList() {
		in.proofMu.Lock()
		if in.deliveries != nil {
			if d, ok := in.deliveries.find(key, rv); ok && (!found || d.After(at)) {
				at, found = d, true
			}
		}
		in.proofMu.Unlock()
	}
	return at, found
}

// maxDeliveries bounds each informer's record of deliveries: one entry per
// object (about 40 bytes); an informer of more objects starts its record
// anew when it is full.
const maxDeliveries = 1 << 18

// deliveries records, for each object (by key hash), the version an
// informer last applied to its store and when: it tells when the version a
// reconcile reads entered the cache, however long ago and whatever the
// event rate since. Kept only while stale-read checks are on.
type deliveries struct {
	byKey map[uint64]delivered
}

type delivered struct {
	rv uint64
	at time.Time
}

func newDeliveries() *deliveries { return &deliveries{byKey: map[uint64]delivered{}} }

// add records that the version rv of the object with key hash key reached
// the store at at.
func (d *deliveries) add(key, rv uint64, at time.Time) {
	if key == 0 {
		return
	}
	if len(d.byKey) >= maxDeliveries {
		clear(d.byKey)
	}
	d.byKey[key] = delivered{rv: rv, at: at}
}

// find returns when the version rv of the object with key hash key reached
// the store, if that is the version it last applied.
func (d *deliveries) find(key, rv uint64) (time.Time, bool) {
	v, ok := d.byKey[key]
	if !ok || v.rv != rv {
		return time.Time{}, false
	}
	return v.at, true
}
