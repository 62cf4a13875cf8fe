//go:build integration

package ctrlstale_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlcache"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/ctrlstale"
)

// rig is a real kube-apiserver with a controller-runtime manager whose
// connection goes through a fault proxy, hooked with ctrlcache and
// ctrlstale on one monitor registered in reg. Its ConfigMap reconciler
// calls each reconcile's read.
type rig struct {
	env   *testenv.Env
	delay func(time.Duration)
	reg   *prometheus.Registry
	mgr   ctrl.Manager
}

const ns = "stale"

func startRig(t *testing.T, env *testenv.Env, opts probe.StaleReadOptions, read func(ctx context.Context, c *rig, req reconcile.Request)) *rig {
	t.Helper()
	proxy, proxied := env.Proxy(t, env.Config)
	ctx, cancel := context.WithCancel(context.Background())
	if err := testenv.EnsureNamespace(ctx, env.Client, ns); err != nil {
		t.Fatal(err)
	}
	mon := probe.New(probe.Options{Controller: "stale-test", HeadProbe: env.Config, ProbeInterval: time.Second, Logger: testr.New(t)})
	o := ctrl.Options{Scheme: scheme.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}}
	o.Controller.SkipNameValidation = ptr.To(true) // one ConfigMap controller per test, in one process
	ctrlcache.Hook(mon, &o)
	ctrlstale.Hook(mon, &o, opts) // the one line
	mgr, err := ctrl.NewManager(proxied, o)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{env: env, delay: proxy.SetDelay, reg: prometheus.NewRegistry(), mgr: mgr}
	if err := mon.Register(r.reg); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(mon); err != nil {
		t.Fatal(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		Complete(ctrlstale.Triggered(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req.Namespace == ns {
				read(ctx, r, req)
			}
			return reconcile.Result{}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache never synced")
	}
	return r
}

// counts sums the stale-read families of ConfigMaps as the monitor exports them.
type counts struct{ checked, stale, limited, failed float64 }

// It may run in the reconciler's goroutine: an error fails the test late.
func (r *rig) counts(t *testing.T) counts {
	t.Helper()
	m, err := testenv.Gather(r.reg)
	if err != nil {
		t.Error(err)
		return counts{}
	}
	cm := map[string]string{catalog.LabelResource: "configmaps"}
	with := func(l, v string) map[string]string {
		return map[string]string{catalog.LabelResource: "configmaps", l: v}
	}
	return counts{
		checked: m.Sum(catalog.StaleReadChecks.Name, with(catalog.LabelResult, catalog.ResultSuccess)),
		limited: m.Sum(catalog.StaleReadChecks.Name, with(catalog.LabelResult, catalog.ResultRateLimited)),
		failed:  m.Sum(catalog.StaleReadChecks.Name, with(catalog.LabelResult, catalog.ResultError)),
		stale:   m.Sum(catalog.StaleReads.Name, cm),
	}
}

// staleAgainst is the test's own verdict: the cache read (cached, err) is
// stale against a live read made before it.
func staleAgainst(live *corev1.ConfigMap, liveErr error, cached *corev1.ConfigMap, err error) bool {
	switch {
	case apierrors.IsNotFound(liveErr):
		return err == nil
	case apierrors.IsNotFound(err):
		return true
	case live.UID != cached.UID:
		return true
	}
	var l, c uint64
	_, _ = fmt.Sscan(live.ResourceVersion, &l)
	_, _ = fmt.Sscan(cached.ResourceVersion, &c)
	return c < l
}

// phase tallies the reads of one phase: the test's verdicts and the
// library's for the same reads.
type phase struct {
	reads, testStale, libStale, libChecked int
	missed                                 int // stale by the test's live read, not by the library's later one
}

// The stale-read ratio the library reports matches the ratio the test
// computes from its own live reads, made right before each reconcile's
// cache read (the library's live read comes after the test's, so every
// read the test finds stale the library must find stale too): ~0 while the
// informer connection is undisturbed, most reads while it is delayed by
// more than the period of the writes to each object, ~0 again after.
func TestStaleReadRatioAgainstOwnLiveReads(t *testing.T) {
	const (
		objects   = 20
		writes    = 10.0 // per second: each object every 2 seconds
		delay     = 3 * time.Second
		tolerance = 0.05 // |library ratio - test ratio| per phase
		minReads  = 40
	)
	var (
		mu     sync.Mutex
		phases = map[string]*phase{"before": {}, "delayed": {}, "after": {}}
		now    atomic.Value // current phase name; "" between phases
		marker atomic.Bool  // the reconciler read the marker ConfigMap
	)
	now.Store("before")
	r := startRig(t, testenv.StartT(t, testenv.Options{}), probe.StaleReadOptions{Fraction: 1, ReadsPerSecond: 1000, Burst: 1000},
		func(ctx context.Context, r *rig, req reconcile.Request) {
			name := now.Load().(string)
			live, liveErr := r.env.Client.CoreV1().ConfigMaps(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
			before := r.counts(t)
			var cached corev1.ConfigMap
			err := r.mgr.GetClient().Get(ctx, req.NamespacedName, &cached)
			after := r.counts(t)
			if req.Name == "marker-0" && err == nil {
				marker.Store(true)
			}
			if (liveErr != nil && !apierrors.IsNotFound(liveErr)) || (err != nil && !apierrors.IsNotFound(err)) || name == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			p := phases[name]
			p.reads++
			test := staleAgainst(live, liveErr, &cached, err)
			lib := after.stale > before.stale
			if test {
				p.testStale++
			}
			if lib {
				p.libStale++
			}
			if test && !lib {
				p.missed++
			}
			p.libChecked += int(after.checked - before.checked)
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go testenv.Churn(ctx, r.env.Client, ns, objects, writes)

	waitReads := func(name string) {
		testenv.WaitFor(t, 3*time.Minute, fmt.Sprintf("%d reads in phase %s", minReads, name), func() (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return phases[name].reads >= minReads, nil
		})
	}
	waitReads("before")
	now.Store("")
	r.delay(delay)
	now.Store("delayed")
	waitReads("delayed")
	now.Store("")
	r.delay(0)
	// the delayed bytes drain: the phase after starts once a write made now reached the reconciler
	if _, err := testenv.WriteConfigMaps(ctx, r.env.Client, ns, "marker", 1); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the reconciler read a ConfigMap written after the delay ended", func() (bool, error) { return marker.Load(), nil })
	now.Store("after")
	waitReads("after")
	now.Store("")

	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"before", "delayed", "after"} {
		p := phases[name]
		test, lib := float64(p.testStale)/float64(p.reads), float64(p.libStale)/float64(p.reads)
		t.Logf("%s: %d reads, stale by the test %.3f, by the library %.3f, library checks %d", name, p.reads, test, lib, p.libChecked)
		if p.missed > 0 {
			t.Errorf("%s: %d reads stale against the test's live read, but not against the library's later one", name, p.missed)
		}
		if p.libChecked != p.reads {
			t.Errorf("%s: the library checked %d of %d reads at fraction 1 and no effective limit", name, p.libChecked, p.reads)
		}
		if d := lib - test; d > tolerance || d < -tolerance {
			t.Errorf("%s: library stale-read ratio %.3f, the test's own %.3f: differ by more than %v", name, lib, test, tolerance)
		}
		switch name {
		case "delayed":
			if lib < 0.3 {
				t.Errorf("delayed: stale-read ratio %.3f with the informer %v behind writes that come every %v per object; want most reads stale", lib, delay, time.Duration(objects/writes*float64(time.Second)))
			}
		default:
			if lib > tolerance {
				t.Errorf("%s: stale-read ratio %.3f with an undisturbed informer; want ~0 (at most %v)", name, lib, tolerance)
			}
		}
	}

	// how far behind, and the cache -> reconcile-read delay
	m, err := testenv.Gather(r.reg)
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]string{catalog.LabelResource: "configmaps"}
	behind, ok := m.Histogram(catalog.StaleReadBehind.Name, cm)
	if !ok || behind.GetSampleCount() == 0 {
		t.Fatal("no rv_behind read was placed on the head timeline")
	}
	t.Logf("rv_behind reads placed on the head timeline: %d, behind %.3fs on average", behind.GetSampleCount(), behind.GetSampleSum()/float64(behind.GetSampleCount()))
	if mean := behind.GetSampleSum() / float64(behind.GetSampleCount()); mean > delay.Seconds()+2 {
		t.Errorf("stale reads behind by %.2fs on average; the informer was at most %v (plus the probe interval) behind", mean, delay)
	}
	readDelay, ok := m.Histogram(catalog.ReconcileReadDelay.Name, cm)
	if !ok || readDelay.GetSampleCount() == 0 {
		t.Fatal("no cache update -> reconcile read delay recorded for the triggering object")
	}
	t.Logf("cache update -> reconcile read: %d reads, %.4fs on average", readDelay.GetSampleCount(), readDelay.GetSampleSum()/float64(readDelay.GetSampleCount()))
	// it starts at the delivery into the cache, not at the write: the
	// proxy's delay, before delivery, is not in it
	if mean := readDelay.GetSampleSum() / float64(readDelay.GetSampleCount()); mean > delay.Seconds()/3 {
		t.Errorf("cache update -> reconcile read %.3fs on average: it includes the informer's delay (%v)", mean, delay)
	}
}

// countGETs counts the live reads by wrapping the transport of the
// configuration the check uses: the ground truth of the live-read limit.
type countGETs struct {
	mu sync.Mutex
	at []time.Time
	rt http.RoundTripper
}

func (c *countGETs) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		c.mu.Lock()
		c.at = append(c.at, time.Now())
		c.mu.Unlock()
	}
	return c.rt.RoundTrip(req)
}

// n returns how many live reads went out.
func (c *countGETs) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

// maxIn returns the most live reads within any window of length w.
func (c *countGETs) maxIn(w time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := append([]time.Time(nil), c.at...)
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	best, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) > w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// A sampled fraction of the reconciles is checked, and the live reads never
// exceed the token bucket whatever the reconcile rate: counted on the wire.
func TestStaleReadSamplingAndLiveReadLimit(t *testing.T) {
	const (
		fraction = 0.5
		rate     = 4.0
		burst    = 2
	)
	env := testenv.StartT(t, testenv.Options{})
	live := &countGETs{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { live.rt = rt; return live })
	var reads atomic.Int64
	r := startRig(t, env, probe.StaleReadOptions{Fraction: fraction, ReadsPerSecond: rate, Burst: burst, Config: cfg},
		func(ctx context.Context, r *rig, req reconcile.Request) {
			var cm corev1.ConfigMap
			if err := r.mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err == nil {
				reads.Add(1)
			}
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go testenv.Churn(ctx, r.env.Client, ns, 30, 40)
	testenv.WaitFor(t, 3*time.Minute, "400 reconcile reads", func() (bool, error) { return reads.Load() >= 400, nil })
	cancel()
	elapsed := time.Since(start)
	c := r.counts(t)
	sampled := c.checked + c.limited + c.failed
	n := float64(reads.Load())
	t.Logf("%v reads in %v: %v sampled (%.3f), %v checked, %v rate limited; %d live GETs", n, elapsed.Round(time.Second), sampled, sampled/n, c.checked, c.limited, live.n())
	if got := sampled / n; got < fraction-0.15 || got > fraction+0.15 {
		t.Errorf("sampled %.3f of the reconcile reads; configured %v", got, fraction)
	}
	if c.limited == 0 {
		t.Error("no sampled read was rate limited at 40 writes/s against 4 live reads/s")
	}
	// every live GET on the wire is a check the library counts once its
	// answer is in: a GET still in flight (or a reconcile still draining
	// the queue) when the counts were read is counted a moment later
	// (CI, 6 December: 54 GETs against 53 checks, read in between)
	testenv.WaitFor(t, time.Minute, "the library's checks to match the live GETs on the wire", func() (bool, error) {
		c := r.counts(t)
		gets := live.n()
		return float64(gets) == c.checked+c.failed, fmt.Errorf("%d live GETs on the wire, the library counts %v checks", gets, c.checked+c.failed)
	})
	// a token bucket admits at most rate*w + burst in any window w; one
	// more for the time between the bucket's decision and the wire
	for _, w := range []time.Duration{time.Second, 5 * time.Second} {
		if got, limit := live.maxIn(w), int(rate*w.Seconds())+burst+1; got > limit {
			t.Errorf("%d live reads within %v; the limit allows %d", got, w, limit)
		}
	}
}
