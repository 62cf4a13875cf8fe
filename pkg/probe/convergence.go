package probe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// generationObject is what a convergence informer keeps of an object:
// identity, RV, generation and observed generation. Spec and status bodies
// are dropped as objects arrive.
type generationObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	ObservedGeneration int64
	HasObserved        bool // the object reports an observed generation at all
}

// DeepCopyObject implements runtime.Object.
func (o *generationObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// generationTransform returns an informer transform that reduces an
// unstructured object to a generationObject, reading the observed
// generation at path (dot-separated, e.g. status.observedGeneration).
func generationTransform(path string) cache.TransformFunc {
	fields := strings.Split(path, ".")
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		g := &generationObject{}
		g.Namespace, g.Name, g.ResourceVersion, g.Generation = u.GetNamespace(), u.GetName(), u.GetResourceVersion(), u.GetGeneration()
		g.ObservedGeneration, g.HasObserved, _ = unstructured.NestedInt64(u.Object, fields...)
		return g, nil
	}
}

// convergence tracks, per object, the generations its controller has not yet
// observed.
type convergence struct {
	histogram prometheus.Observer

	mu      sync.Mutex
	pending map[string]pendingGeneration // by namespace/name
}

// pendingGeneration is an object's oldest and newest unobserved generations
// with the times they were first seen.
type pendingGeneration struct {
	oldest, newest         int64
	oldestSeen, newestSeen time.Time
}

// update applies an object's current generation and observed generation.
func (c *convergence) update(key string, gen, observed int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, pending := c.pending[key]
	if pending {
		if observed >= p.oldest {
			c.histogram.Observe(now.Sub(p.oldestSeen).Seconds())
			if p.newest != p.oldest && observed >= p.newest {
				c.histogram.Observe(now.Sub(p.newestSeen).Seconds())
			}
			if observed >= p.newest {
				delete(c.pending, key)
				pending = false
			} else {
				p.oldest, p.oldestSeen = p.newest, p.newestSeen
				c.pending[key] = p
			}
		}
	}
	if observed >= gen {
		return
	}
	switch {
	case !pending:
		c.pending[key] = pendingGeneration{oldest: gen, newest: gen, oldestSeen: now, newestSeen: now}
	case gen > p.newest:
		p.newest, p.newestSeen = gen, now
		c.pending[key] = p
	}
}

func (c *convergence) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, key)
}

func (c *convergence) snapshot(now time.Time) *convergenceSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &convergenceSnapshot{Unconverged: len(c.pending)}
	for _, p := range c.pending {
		s.OldestSeconds = max(s.OldestSeconds, now.Sub(p.oldestSeen).Seconds())
	}
	return s
}

// newConvergenceInformer returns an instrumented informer for gvr that also
// tracks generation convergence: how long objects wait between a new
// metadata.generation and a status.observedGeneration (at path) that covers
// it. It keeps only generationObjects in its store.
func (m *Monitor) newConvergenceInformer(cfg *rest.Config, gvr schema.GroupVersionResource, tracker *tracker, path string) (cache.SharedIndexInformer, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", tracker.name, err)
	}
	res := client.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(m.instrument(tracker, cache.ToListWatcherWithWatchListSemantics(lw, client)),
		&unstructured.Unstructured{}, cache.SharedIndexInformerOptions{ObjectDescription: tracker.name})
	_ = inf.SetTransform(generationTransform(path))
	m.observe(tracker, inf)
	conv := &convergence{histogram: m.metrics.GenerationConvergence.WithLabelValues(tracker.name), pending: map[string]pendingGeneration{}}
	tracker.mu.Lock()
	tracker.converge = conv
	tracker.mu.Unlock()
	clk := m.opts.Clock
	apply := func(obj any) {
		if g, ok := obj.(*generationObject); ok {
			conv.update(g.Namespace+"/"+g.Name, g.Generation, g.ObservedGeneration, clk.Now())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    apply,
		UpdateFunc: func(_, obj any) { apply(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				conv.remove(key)
			}
		},
	})
	return inf, nil
}
