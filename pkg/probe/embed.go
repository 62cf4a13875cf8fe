package probe

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// heads adds head sources for resources that hooks discover, when the
// monitor was given a head-probe client configuration.
type heads struct {
	once   sync.Once
	client metadata.Interface
	err    error
	mu     sync.Mutex
	added  map[string]bool
}

// trackGVR returns the tracker of gvr in the default RV space and, when a
// head probe is configured, makes gvr a head source of that space.
func (m *Monitor) trackGVR(gvr schema.GroupVersionResource) *Tracker {
	name := ResourceName(gvr.GroupResource())
	t := m.Track(name, "")
	if m.opts.HeadProbe == nil {
		return t
	}
	h := &m.heads
	h.once.Do(func() {
		h.client, h.err = metadata.NewForConfig(OwnConnection(m.opts.HeadProbe))
		h.added = map[string]bool{}
	})
	if h.err != nil {
		m.opts.Logger.Error(h.err, "head probe client")
		return t
	}
	h.mu.Lock()
	first := !h.added[name]
	h.added[name] = true
	h.mu.Unlock()
	if first {
		m.AddHeadSource("", name, MetadataHead(h.client, gvr))
	}
	return t
}

// instrumented builds a shared informer over lw that tracker measures.
func (m *Monitor) instrumented(t *Tracker, lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(m.Instrument(t, lw), example, resync, indexers)
	m.Observe(t, inf)
	return inf
}

// InstrumentManager makes every informer of a controller-runtime manager's
// cache — the informers its controllers actually read from — report the
// rvsync signals under the same metric names as the exporter, so the
// shipped dashboards and alerts work unchanged. Call it on the options
// before ctrl.NewManager, register the monitor's metrics (for example with
// controller-runtime's metrics.Registry) and add the monitor to the manager
// (it is a manager.Runnable) to run the head probe, if configured.
//
// It sets o.Cache.NewInformer and wraps o.MapperProvider to learn the
// manager's RESTMapper: NewInformer is not told the resource, only the
// object, which the mapper resolves.
func (m *Monitor) InstrumentManager(o *manager.Options) {
	var (
		mu     sync.Mutex
		mapper meta.RESTMapper
	)
	provide := o.MapperProvider
	if provide == nil {
		provide = apiutil.NewDynamicRESTMapper
	}
	o.MapperProvider = func(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
		mp, err := provide(c, hc)
		mu.Lock()
		mapper = mp
		mu.Unlock()
		return mp, err
	}
	scheme := o.Scheme
	newInformer := o.Cache.NewInformer
	if newInformer == nil {
		newInformer = cache.NewSharedIndexInformer
	}
	o.Cache.NewInformer = func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		mu.Lock()
		mp := mapper
		mu.Unlock()
		gvr, err := resourceOf(obj, scheme, mp)
		if err != nil {
			m.opts.Logger.Error(err, "not instrumenting an informer: its resource is unknown")
			return newInformer(lw, obj, resync, indexers)
		}
		t := m.trackGVR(gvr)
		inf := newInformer(m.Instrument(t, lw), obj, resync, indexers)
		m.Observe(t, inf)
		return inf
	}
}

func resourceOf(obj runtime.Object, scheme *runtime.Scheme, mapper meta.RESTMapper) (schema.GroupVersionResource, error) {
	if mapper == nil {
		return schema.GroupVersionResource{}, fmt.Errorf("no RESTMapper yet")
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() && scheme != nil {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, scheme); err != nil {
			return schema.GroupVersionResource{}, err
		}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return mapping.Resource, nil
}

// InformerFunc returns an informer constructor for client-go's
// SharedInformerFactory.InformerFor, so that the factory's informer for
// example's type is instrumented:
//
//	factory.InformerFor(&corev1.ConfigMap{}, mon.InformerFunc(clientset.CoreV1().RESTClient(),
//		corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{}))
//	informer := factory.Core().V1().ConfigMaps().Informer() // the instrumented one
//
// restClient is the typed client of gvr's group version.
func (m *Monitor) InformerFunc(restClient cache.Getter, gvr schema.GroupVersionResource, example runtime.Object) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.NewFilteredListWatchFromClient(restClient, gvr.Resource, "", func(*metav1.ListOptions) {})
		return m.instrumented(m.trackGVR(gvr), lw, example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
}

// Start implements manager.Runnable: it runs the head probe (if configured)
// until ctx ends. Outside a manager, call Run.
func (m *Monitor) Start(ctx context.Context) error { return m.Run(ctx) }
