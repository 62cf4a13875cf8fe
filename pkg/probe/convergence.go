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
	"k8s.io/utils/clock"
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
		g.Namespace, g.Name, g.UID, g.ResourceVersion, g.Generation = u.GetNamespace(), u.GetName(), u.GetUID(), u.GetResourceVersion(), u.GetGeneration()
		g.ObservedGeneration, g.HasObserved, _ = unstructured.NestedInt64(u.Object, fields...)
		return g, nil
	}
}

// convergence tracks, per object, the generations its controller has not yet
// observed. Objects are keyed by UID: one deleted and recreated under the
// same name while the watch was down is another object, whose lower
// generation must not be judged against the old one's.
type convergence struct {
	histogram prometheus.Observer

	mu      sync.Mutex
	pending map[string]pendingGeneration // by UID
	// unobservable holds, while no object of the resource has reported an
	// observed generation, the objects' generations as pending would: such
	// a resource says nothing about convergence. Once one object reports,
	// the resource's controller does, and these were waiting for it all
	// along.
	unobservable map[string]pendingGeneration
	observable   bool // an object of the resource reported an observed generation
}

func newConvergence(h prometheus.Observer) *convergence {
	return &convergence{histogram: h, pending: map[string]pendingGeneration{}, unobservable: map[string]pendingGeneration{}}
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

// apply takes an object's current state. An object that reports no
// observed generation is waiting for its controller when other objects of
// the resource report one, and is counted apart while none does.
func (c *convergence) apply(g *generationObject, now time.Time) {
	key := convergenceKey(g)
	c.mu.Lock()
	switch {
	case !g.HasObserved && !c.observable:
		u, seen := c.unobservable[key]
		switch {
		case !seen:
			u = pendingGeneration{oldest: g.Generation, newest: g.Generation, oldestSeen: now, newestSeen: now}
		case g.Generation > u.newest:
			u.newest, u.newestSeen = g.Generation, now
		}
		c.unobservable[key] = u
		c.mu.Unlock()
		return
	case g.HasObserved && !c.observable:
		c.observable = true
		for k, u := range c.unobservable {
			c.pending[k] = u
		}
		clear(c.unobservable)
	}
	c.mu.Unlock()
	c.update(key, g.Generation, g.ObservedGeneration, now)
}

func (c *convergence) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, key)
	delete(c.unobservable, key)
}

func (c *convergence) snapshot(now time.Time) *convergenceSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &convergenceSnapshot{Unconverged: len(c.pending), Unobservable: len(c.unobservable)}
	for _, p := range c.pending {
		s.OldestSeconds = max(s.OldestSeconds, now.Sub(p.oldestSeen).Seconds())
	}
	return s
}

// newConvergenceInformer returns an instrumented informer for gvr that also
// tracks generation convergence: how long objects wait between a new
// metadata.generation and a status.observedGeneration (at path) that covers
// it. It keeps only generationObjects in its store.
// Its freshness reads ride cfg's connection and tell the informer its
// protocol (informer.observeProto).
func (m *Monitor) newConvergenceInformer(cfg *rest.Config, gvr schema.GroupVersionResource, r *resource, path string) (cache.SharedIndexInformer, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", r.name, err)
	}
	reads, err := newCollection(cfg, gvr)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", r.name, err)
	}
	inf, in := m.convergenceInformer(client, gvr, r, path, reads.head)
	reads.proto = in.observeProto
	return inf, nil
}

// convergenceInformer is newConvergenceInformer over a given client; it
// returns the informer's state too.
func (m *Monitor) convergenceInformer(client dynamic.Interface, gvr schema.GroupVersionResource, r *resource, path string, freshen headFunc) (cache.SharedIndexInformer, *informer) {
	res := client.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	ilw := m.instrument(r, cache.ToListWatcherWithWatchListSemantics(lw, client))
	ilw.state.seesCanary.Store(true) // every namespace
	m.freshenWith(ilw.state, freshen, true)
	inf := cache.NewSharedIndexInformerWithOptions(ilw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{ObjectDescription: r.name, Indexers: cache.Indexers{}})
	_ = inf.SetTransform(generationTransform(path))
	ilw.state.attach(inf, m.opts.Logger)
	conv := newConvergence(m.metrics.GenerationConvergence.WithLabelValues(r.name))
	r.converge.Store(conv)
	_, _ = inf.AddEventHandler(conv.handlers(m.opts.Clock))
	return inf, ilw.state
}

// convergenceKey is the key of an object's pending generations: its UID.
func convergenceKey(g *generationObject) string { return string(g.UID) }

// handlers apply an informer's notifications to c.
func (c *convergence) handlers(clk clock.PassiveClock) cache.ResourceEventHandlerFuncs {
	apply := func(obj any) {
		if g, ok := obj.(*generationObject); ok {
			c.apply(g, clk.Now())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: apply,
		UpdateFunc: func(old, obj any) {
			// a relist after the object was deleted and recreated under its
			// name delivers the new object as an update of the old one
			if o, ok := old.(*generationObject); ok {
				if n, ok := obj.(*generationObject); ok && o.UID != n.UID {
					c.remove(convergenceKey(o))
				}
			}
			apply(obj)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if g, ok := obj.(*generationObject); ok {
				c.remove(convergenceKey(g))
			}
		},
	}
}
