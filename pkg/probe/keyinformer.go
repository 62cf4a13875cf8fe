package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// newKeyInformer returns the exporter's informer of gvr across all
// namespaces, measured by r: it reads metadata only, down to each object's
// digest and resource version as the stream passes (metaLW), and its store
// keeps the digests alone (keyStore). cfg is the configuration of its
// requests, its freshness reads' too (on the same connection); every answer
// tells the informer its protocol (informer.observeProto).
func (m *Monitor) newKeyInformer(cfg *rest.Config, gvr schema.GroupVersionResource, r *resource) (cache.SharedIndexInformer, error) {
	in := r.newInformer()
	store := newKeyStore(in, r.name)
	lw, err := newMetaLW(cfg, gvr, store, r.isCanary)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", r.name, err)
	}
	lw.proto = in.observeProto
	return m.keyInformerOf(in, store, lw, lw.head), nil
}

// keyInformer returns a key informer of PartialObjectMetadata from any lw
// (for tests: its objects are keyed as they reach the store), measured by
// r; freshen is its freshness read on its own connection (nil: none).
func (m *Monitor) keyInformer(lw cache.ListerWatcher, r *resource, freshen headFunc) cache.SharedIndexInformer {
	in := r.newInformer()
	return m.keyInformerOf(in, newKeyStore(in, r.name), lw, freshen)
}

func (m *Monitor) keyInformerOf(in *informer, store *keyStore, lw cache.ListerWatcher, freshen headFunc) *keyInformer {
	ilw := m.wrap(in, lw)
	in.seesCanary.Store(true) // every namespace
	m.freshenWith(in, freshen, true)
	ki := &keyInformer{store: store, lw: ilw, description: in.res.name, log: m.opts.Logger.WithValues("resource", in.res.name)}
	in.setHook(func(h *informerHooks) {
		h.synced, h.stopped, h.storeRV = ki.HasSynced, ki.IsStopped, store.LastStoreSyncResourceVersion
	})
	return ki
}

// keyInformer is the exporter's informer of a resource: client-go's
// reflector writing a keyStore directly, no FIFO, no handler goroutines.
// It is a measuring instrument, not a cache to read from: its store
// holds digests of keys, its event handlers get keyObjects (digest and
// resource version) and run in the reflector's goroutine, in order, and
// its indexers index keyObjects.
type keyInformer struct {
	store       *keyStore
	lw          cache.ListerWatcher
	description string
	log         logr.Logger

	mu         sync.Mutex
	started    bool
	stopped    bool
	controller cache.Controller
	onError    cache.WatchErrorHandlerWithContext
}

var _ cache.SharedIndexInformer = (*keyInformer)(nil)

var errStarted = errors.New("key informer: already started")

func (ki *keyInformer) Run(stopCh <-chan struct{}) { ki.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext lists and watches until ctx ends.
func (ki *keyInformer) RunWithContext(ctx context.Context) {
	ki.mu.Lock()
	if ki.started || ki.stopped {
		ki.mu.Unlock()
		return
	}
	ki.started = true
	onError := ki.onError
	if onError == nil {
		log := ki.log
		onError = func(_ context.Context, _ *cache.Reflector, err error) {
			log.Error(err, "list/watch failed; the informer retries with backoff")
		}
	}
	ki.controller = cache.New(&cache.Config{
		Queue:                        reflectorStore{ki.store},
		ListerWatcher:                ki.lw,
		Process:                      func(any, bool) error { return nil },
		ObjectDescription:            ki.description,
		WatchErrorHandlerWithContext: onError,
	})
	c := ki.controller
	ki.mu.Unlock()
	defer func() {
		ki.mu.Lock()
		ki.stopped = true
		ki.mu.Unlock()
	}()
	c.RunWithContext(ctx)
}

func (ki *keyInformer) HasSynced() bool { return ki.store.hasSynced() }

func (ki *keyInformer) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{ki.description, ki.store.syncCh}
}

func (ki *keyInformer) IsStopped() bool {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	return ki.stopped
}

func (ki *keyInformer) LastSyncResourceVersion() string {
	ki.mu.Lock()
	c := ki.controller
	ki.mu.Unlock()
	if c == nil {
		return ""
	}
	return c.LastSyncResourceVersion()
}

func (ki *keyInformer) GetStore() cache.Store     { return storeView{ki.store} }
func (ki *keyInformer) GetIndexer() cache.Indexer { return storeView{ki.store} }
func (ki *keyInformer) GetController() cache.Controller {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	return ki.controller
}

func (ki *keyInformer) AddIndexers(indexers cache.Indexers) error {
	return ki.store.addIndexers(indexers)
}

// AddEventHandler registers h; it runs in the reflector's goroutine, in
// order with the store's writes (a slow handler slows the informer).
func (ki *keyInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	if ki.stopped {
		return nil, fmt.Errorf("handler not added: the informer of %s stopped", ki.description)
	}
	return ki.store.addHandler(h), nil
}

// AddEventHandlerWithResyncPeriod registers h; the key informer never
// resyncs.
func (ki *keyInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return ki.AddEventHandler(h)
}

func (ki *keyInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return ki.AddEventHandler(h)
}

func (ki *keyInformer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	kh, ok := reg.(*keyHandler)
	if !ok {
		return fmt.Errorf("not a registration of this informer: %T", reg)
	}
	ki.store.removeHandler(kh)
	return nil
}

func (ki *keyInformer) SetWatchErrorHandler(h cache.WatchErrorHandler) error {
	return ki.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { h(r, err) })
}

func (ki *keyInformer) SetWatchErrorHandlerWithContext(h cache.WatchErrorHandlerWithContext) error {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	if ki.started {
		return errStarted
	}
	ki.onError = h
	return nil
}

// SetTransform is refused: the key informer keeps digests, whatever the
// objects.
func (ki *keyInformer) SetTransform(cache.TransformFunc) error {
	return errors.New("key informer: its store keeps digests of keys; it takes no transform")
}
