//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// Cadence of the ground truth's own Lists and canary writes: five times the
// exporter's (1s in the chart values of the stack), so that its
// distributions are the finer ones.
const truthEvery = 200 * time.Millisecond

// The ground truth writes a ring of truthCanaries ConfigMaps named
// truthCanary-<i>, one after the other, and watches them. One object would
// measure the truth's own queue: its writes go out whether or not the ones
// before them returned, and concurrent patches of one object retry each
// other's conflicts in the API server, one commit at a time. In a CI run
// of an etcd leader's kill on a loaded machine, the one-object truth saw
// writes delivered after 5.5 s on average and 24 s at most while the
// exporter's (one write at a time) saw 5 s at most, and its degraded share
// read 91.7 % against the exporter's 31.6 %. With a ring, an object is
// written again only every truthCanaries*truthEvery (10 s).
const (
	truthCanary   = "truth-canary"
	truthCanaries = 50
)

// truthCanaryName is the name of the ring's i-th object.
func truthCanaryName(i int) string { return truthCanary + "-" + strconv.Itoa(i%truthCanaries) }

// startTruth starts the ground truth's prober, canary writer and informer
// against cfg (an admin configuration), writing its canary in ns, until the
// test ends, and waits until its informer has synced.
func startTruth(t *testing.T, cfg *rest.Config, ns string) *truth {
	t.Helper()
	g := &truth{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	meta, err := metadata.NewForConfig(ownConnection(cfg))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := kubernetes.NewForConfig(ownConnection(cfg))
	if err != nil {
		t.Fatal(err)
	}
	// Patches need the objects; a failure here shows in the writes' errors.
	for i := range truthCanaries {
		_, _ = writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: truthCanaryName(i)}}, metav1.CreateOptions{})
	}
	informer := g.informer(meta, ns)
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() { every(ctx, &wg, g.probe(meta)) })
	wg.Go(func() { every(ctx, &wg, g.write(writer, ns)) })
	testenv.WaitFor(t, 2*time.Minute, "the ground truth's informer synced", func() (bool, error) {
		return informer.HasSynced(), nil
	})
	g.mu.Lock()
	g.synced = true
	g.mu.Unlock()
	return g
}

// ownConnection returns a copy of cfg with a transport of its own: client-go
// shares one HTTP/2 connection between equal configurations, and the ground
// truth must not queue behind the exporter or the workload.
func ownConnection(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Dial = (&net.Dialer{}).DialContext
	c.QPS, c.Burst = -1, 0 // no client-side rate limit: it would delay the samples
	return c
}

// every calls f in a goroutine of its own every truthEvery until ctx ends,
// whether or not the previous call returned: a request that hangs in an
// etcd election does not hold back the ones behind it, so the samples
// spread evenly over time and their fractions are fractions of time.
func every(ctx context.Context, wg *sync.WaitGroup, f func(ctx context.Context)) {
	tick := time.NewTicker(truthEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				f(rctx)
			})
		}
	}
}

// probe sends the head probe's request, a consistent List limit=1 of
// configmaps' metadata, and records how long it took.
func (g *truth) probe(client metadata.Interface) func(context.Context) {
	res := client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	return func(ctx context.Context) {
		start := time.Now()
		l, err := res.List(ctx, metav1.ListOptions{Limit: 1})
		d := time.Since(start)
		var rv uint64
		if err == nil {
			rv, err = strconv.ParseUint(l.ResourceVersion, 10, 64)
		}
		g.mu.Lock()
		g.lists = append(g.lists, timedCall{at: start, d: d, err: err, rv: rv})
		g.mu.Unlock()
	}
}

// write patches the ring's next truth canary and records the write's send
// time and RV.
func (g *truth) write(c kubernetes.Interface, ns string) func(context.Context) {
	cms := c.CoreV1().ConfigMaps(ns)
	return func(ctx context.Context) {
		w := &truthWrite{sent: time.Now()}
		g.mu.Lock()
		g.writes = append(g.writes, w)
		name := truthCanaryName(len(g.writes))
		g.mu.Unlock()
		patch := fmt.Appendf(nil, `{"data":{"sent":%q}}`, strconv.FormatInt(w.sent.UnixNano(), 10))
		cm, err := cms.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		var rv uint64
		if err == nil {
			rv, err = strconv.ParseUint(cm.ResourceVersion, 10, 64)
		}
		acked := time.Now()
		g.mu.Lock()
		w.rv, w.err, w.acked = rv, err, acked
		g.mu.Unlock()
	}
}

// informer returns an informer of configmaps' metadata in every namespace,
// as the exporter watches them, that records every delivery of a truth
// canary in ns above the ones before (in RV order: a relist's objects come
// in name order) and counts what its ListerWatcher sees.
func (g *truth) informer(client metadata.Interface, ns string) cache.SharedIndexInformer {
	res := client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	count := func(f func(*informerCounts)) {
		g.mu.Lock()
		defer g.mu.Unlock()
		f(&g.counts)
	}
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.Continue == "" {
				count(func(c *informerCounts) { c.relists++ })
			}
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				count(func(c *informerCounts) { c.relists++ })
			} else {
				count(func(c *informerCounts) { c.watches++ })
			}
			return res.Watch(ctx, o)
		},
	}, client)
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {
		count(func(c *informerCounts) { c.watchErrors++ })
	})
	seen := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		now := time.Now()
		rv, err := strconv.ParseUint(m.ResourceVersion, 10, 64)
		if err != nil {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if n := len(g.reached); n == 0 || rv > g.reached[n-1].rv {
			g.reached = append(g.reached, delivery{rv: rv, at: now})
		}
		if n := len(g.deliveries); m.Namespace == ns && strings.HasPrefix(m.Name, truthCanary+"-") && (n == 0 || rv > g.deliveries[n-1].rv) {
			g.deliveries = append(g.deliveries, delivery{rv: rv, at: now})
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }, DeleteFunc: seen,
	})
	return inf
}
