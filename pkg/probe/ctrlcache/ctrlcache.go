package ctrlcache

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Hook makes every informer of the manager built from o report to mon. Call it on the options before ctrl.NewManager, register the monitor's
// metrics (for example with controller-runtime's metrics.Registry) and add
// the monitor to the manager (it is a manager.Runnable) to run the head
// probe, if configured.
//
// It sets o.Cache.NewInformer, wrapping any constructor already there, and
// wraps o.MapperProvider to learn the manager's RESTMapper: NewInformer is
// told the object, not its resource, which the mapper resolves.
func Hook(mon *probe.Monitor, o *manager.Options) {
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
	log := o.Logger.WithName("rvsync")
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
			log.Error(err, "not measuring an informer: its resource is unknown")
			return newInformer(lw, obj, resync, indexers)
		}
		return mon.Instrument(gvr, lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return newInformer(lw, obj, resync, indexers)
		})
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
