package probe

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
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

// TrackResource returns the tracker of gvr in the default RV space and, when
// a head probe is configured (Options.HeadProbe), makes gvr a head source of
// that space. Hooks that learn an informer's resource late (a
// controller-runtime cache, see package ctrlcache) use it.
func (m *Monitor) TrackResource(gvr schema.GroupVersionResource) *Tracker {
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
		return m.instrumented(m.TrackResource(gvr), lw, example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
}

// Start runs the head probe (if configured) until ctx ends; it makes the
// Monitor a controller-runtime manager.Runnable. Outside a manager, call Run.
func (m *Monitor) Start(ctx context.Context) error { return m.Run(ctx) }

// Logger returns the monitor's logger.
func (m *Monitor) Logger() logr.Logger { return m.opts.Logger }
