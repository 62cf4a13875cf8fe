package probe

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// keyStore is a key informer's store: the set of the digests of the
// objects it holds, and the store's resource version. Client-go's
// reflector writes it directly (as kube-state-metrics' stores are
// written), with no FIFO and no handler goroutines between: each watch
// event is applied in the reflector's goroutine, which then tells the
// informer's state (stage 2, informer.drain in applied.go) what the store
// holds, and calls the event handlers, if any, in order.
//
// A list streams into it: its own ListerWatcher (metaLW) adds each item of
// a List or of a watch-list's initial events to a staged set as it is
// decoded (stage, staged.add), and the list's end replaces the store's set
// with it (Replace). A list is never held as objects; the first list builds
// the store's set itself.
//
// With event handlers or indexers (AddEventHandler, AddIndexers) it also
// keeps a client-go indexer of the keyObjects, for them.
type keyStore struct {
	in          *informer
	description string

	mu     sync.Mutex
	keys   map[digest]struct{}
	rv     string // LastStoreSyncResourceVersion
	synced bool
	syncCh chan struct{} // closed once synced
	closed chan struct{}
	// the staged set of the list under way (nil: none), and the attempt
	// it belongs to: only the latest list's, once complete, replaces
	staging *staging
	attempt uint64
	indexer cache.Indexer // with indexers only

	// notifyMu orders the writes and their notifications against a handler
	// joining (which is first told what the store holds)
	notifyMu sync.Mutex
	handlers []*keyHandler
}

func newKeyStore(in *informer, description string) *keyStore {
	return &keyStore{in: in, description: description, keys: map[digest]struct{}{}, syncCh: make(chan struct{}), closed: make(chan struct{})}
}

// staging is the set a list streams into before it replaces the store's.
type staging struct {
	store    *keyStore
	attempt  uint64
	keys     map[digest]struct{}
	complete bool
}

// stage starts a list: what the previous one staged is dropped, and items
// go to the returned set until the list completes (done). The first list's
// set becomes the store's own, without a copy.
func (s *keyStore) stage() *staging {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempt++
	st := &staging{store: s, attempt: s.attempt, keys: make(map[digest]struct{})}
	s.staging = st
	return st
}

// current returns the staged set of the list under way, if any.
func (s *keyStore) current() *staging {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staging
}

// add stages one item of the list.
func (st *staging) add(d digest) { st.keys[d] = struct{}{} }

// done marks the list complete: the store's next Replace takes its set,
// unless another list started since.
func (st *staging) done() {
	s := st.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.staging == st {
		st.complete = true
	}
}

// keyHandler is one registered event handler.
type keyHandler struct {
	h        cache.ResourceEventHandler
	synced   chan struct{} // closed once it was told the initial list
	syncOnce sync.Once
}

func (h *keyHandler) markSynced() { h.syncOnce.Do(func() { close(h.synced) }) }

func (h *keyHandler) HasSynced() bool {
	select {
	case <-h.synced:
		return true
	default:
		return false
	}
}

func (h *keyHandler) HasSyncedChecker() cache.DoneChecker { return doneChecker{"handler", h.synced} }

type doneChecker struct {
	name string
	done chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

// digestOfObject returns the digest and keyObject of what the reflector
// hands the store.
func digestOfObject(obj any) (*keyObject, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	k, _ := objectKey(obj)
	ko, ok := k.(*keyObject)
	if !ok {
		return nil, fmt.Errorf("key informer: cannot key %T", obj)
	}
	return ko, nil
}

// apply applies one watch event to the store, then tells the informer's
// state and the handlers (a delete whether or not the store held the
// object, as client-go's informers do).
func (s *keyStore) apply(obj any, deleted bool) error {
	k, err := digestOfObject(obj)
	if err != nil {
		return err
	}
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	_, existed := s.keys[k.digest]
	if deleted {
		delete(s.keys, k.digest)
	} else {
		s.keys[k.digest] = struct{}{}
	}
	if rv := k.GetResourceVersion(); rv != "" {
		s.rv = rv
	}
	n := len(s.keys)
	indexer := s.indexer
	s.mu.Unlock()
	if indexer != nil {
		if deleted {
			err = indexer.Delete(k)
		} else {
			err = indexer.Update(k)
		}
	}
	s.in.objects.Store(int64(n))
	s.in.drain(k.rv, k.digest.hash())
	for _, h := range s.handlers {
		switch {
		case deleted:
			h.h.OnDelete(k)
		case existed:
			h.h.OnUpdate(k, k)
		default:
			h.h.OnAdd(k, false)
		}
	}
	return err
}

// replace makes the store hold what a list found: the staged set of the
// latest complete list (metaLW completes it before the list ends), and
// items (keyed the same way: what another ListerWatcher listed).
func (s *keyStore) replace(items []any, rv string) error {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	st := s.staging
	s.staging = nil
	var keys map[digest]struct{}
	if st != nil && st.complete {
		keys = st.keys
	} else {
		keys = make(map[digest]struct{}, len(items))
	}
	for _, item := range items {
		k, err := digestOfObject(item)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		keys[k.digest] = struct{}{}
	}
	old := s.keys
	s.keys, s.rv = keys, rv
	initial := !s.synced
	s.synced = true
	indexer := s.indexer
	n := len(keys)
	s.mu.Unlock()
	if initial {
		close(s.syncCh)
	}
	var err error
	if indexer != nil || len(s.handlers) > 0 {
		err = s.replaced(old, keys, initial, indexer)
	}
	s.in.objects.Store(int64(n))
	s.in.drain(0, 0)
	for _, h := range s.handlers {
		h.markSynced()
	}
	return err
}

// replaced tells the indexer and the handlers what a list changed: an add
// or an update of every listed object, a delete of every other, as
// client-go's informers do.
func (s *keyStore) replaced(old, keys map[digest]struct{}, initial bool, indexer cache.Indexer) error {
	var list []any
	for d := range keys {
		list = append(list, &keyObject{digest: d})
	}
	var err error
	if indexer != nil {
		err = indexer.Replace(list, "")
	}
	for _, obj := range list {
		k := obj.(*keyObject)
		_, existed := old[k.digest]
		for _, h := range s.handlers {
			if existed {
				h.h.OnUpdate(k, k)
			} else {
				h.h.OnAdd(k, initial)
			}
		}
	}
	for d := range old {
		if _, ok := keys[d]; ok {
			continue
		}
		k := &keyObject{digest: d}
		for _, h := range s.handlers {
			h.h.OnDelete(cache.DeletedFinalStateUnknown{Key: k.GetName(), Obj: k})
		}
	}
	return err
}

// bookmark records the store's resource version from a bookmark, then
// tells the informer's state.
func (s *keyStore) bookmark(rv string) {
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
	s.in.drain(0, 0)
}

// LastStoreSyncResourceVersion returns the resource version the store
// holds: of its latest event, bookmark or list.
func (s *keyStore) LastStoreSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

func (s *keyStore) hasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// addHandler registers h; once the store holds a list, h is first told
// its objects as the initial list.
func (s *keyStore) addHandler(h cache.ResourceEventHandler) *keyHandler {
	kh := &keyHandler{h: h, synced: make(chan struct{})}
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	var held []digest
	if s.synced {
		held = make([]digest, 0, len(s.keys))
		for d := range s.keys {
			held = append(held, d)
		}
	}
	synced := s.synced
	s.mu.Unlock()
	for _, d := range held {
		h.OnAdd(&keyObject{digest: d}, true)
	}
	if synced {
		kh.markSynced()
	}
	s.handlers = append(append([]*keyHandler(nil), s.handlers...), kh)
	return kh
}

func (s *keyStore) removeHandler(kh *keyHandler) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	var hs []*keyHandler
	for _, h := range s.handlers {
		if h != kh {
			hs = append(hs, h)
		}
	}
	s.handlers = hs
}

// addIndexers indexes the store's objects (keyObjects) by indexers, from
// now on.
func (s *keyStore) addIndexers(indexers cache.Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexer == nil {
		s.indexer = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		for d := range s.keys {
			if err := s.indexer.Add(&keyObject{digest: d}); err != nil {
				return err
			}
		}
	}
	return s.indexer.AddIndexers(indexers)
}

// ---- the reflector's side: a cache.Queue ----

// reflectorStore is the store as client-go's reflector (through a
// cache.Controller, for its error handler) writes it: every write is
// applied at once, and Pop has nothing to give (the controller's
// processing loop waits in it until the informer stops).
type reflectorStore struct{ s *keyStore }

var (
	_ cache.Queue                  = reflectorStore{}
	_ cache.ReflectorBookmarkStore = reflectorStore{}
	_ cache.TransformingStore      = reflectorStore{}
)

func (r reflectorStore) Add(obj any) error    { return r.s.apply(obj, false) }
func (r reflectorStore) Update(obj any) error { return r.s.apply(obj, false) }
func (r reflectorStore) Delete(obj any) error { return r.s.apply(obj, true) }
func (r reflectorStore) Replace(items []any, rv string) error {
	return r.s.replace(items, rv)
}
func (r reflectorStore) Resync() error { return nil }
func (r reflectorStore) Bookmark(rv string) error {
	r.s.bookmark(rv)
	return nil
}

// Transformer keys the objects of a watch-list that the reflector
// collects itself (a ListerWatcher other than metaLW).
func (r reflectorStore) Transformer() cache.TransformFunc { return objectKey }

func (r reflectorStore) Pop(cache.PopProcessFunc) (any, error) {
	<-r.s.closed
	return nil, cache.ErrFIFOClosed
}

func (r reflectorStore) HasSynced() bool { return r.s.hasSynced() }
func (r reflectorStore) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{r.s.description, r.s.syncCh}
}

func (r reflectorStore) Close() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	select {
	case <-r.s.closed:
	default:
		close(r.s.closed)
	}
}

// ---- the reader's side: a cache.Indexer ----

// storeView is the store as GetStore and GetIndexer show it: the digests
// as keys, keyObjects (without resource versions) as objects. It is read
// only: the reflector alone writes the store.
type storeView struct{ s *keyStore }

var _ cache.Indexer = storeView{}

var errReadOnly = errors.New("key informer: the store is written by its reflector only")

func (v storeView) Add(any) error               { return errReadOnly }
func (v storeView) Update(any) error            { return errReadOnly }
func (v storeView) Delete(any) error            { return errReadOnly }
func (v storeView) Replace([]any, string) error { return errReadOnly }
func (v storeView) Resync() error               { return nil }
func (v storeView) Bookmark(string)             {}

func (v storeView) List() []any {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	out := make([]any, 0, len(v.s.keys))
	for d := range v.s.keys {
		out = append(out, &keyObject{digest: d})
	}
	return out
}

func (v storeView) ListKeys() []string {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	out := make([]string, 0, len(v.s.keys))
	for d := range v.s.keys {
		out = append(out, string(d[:]))
	}
	return out
}

func (v storeView) LastStoreSyncResourceVersion() string { return v.s.LastStoreSyncResourceVersion() }

func (v storeView) Get(obj any) (any, bool, error) {
	k, err := digestOfObject(obj)
	if err != nil {
		return nil, false, err
	}
	return v.GetByKey(k.GetName())
}

// GetByKey looks up a digest (the store's keys are digests).
func (v storeView) GetByKey(key string) (any, bool, error) {
	if len(key) != keyBytes {
		return nil, false, nil
	}
	d := digest([]byte(key))
	v.s.mu.Lock()
	_, ok := v.s.keys[d]
	v.s.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	return &keyObject{digest: d}, true, nil
}

func (v storeView) indexer() cache.Indexer {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.indexer
}

var errNoIndex = errors.New("key informer: no such index")

func (v storeView) Index(name string, obj any) ([]any, error) {
	if ix := v.indexer(); ix != nil {
		return ix.Index(name, obj)
	}
	return nil, errNoIndex
}

func (v storeView) IndexKeys(name, value string) ([]string, error) {
	if ix := v.indexer(); ix != nil {
		return ix.IndexKeys(name, value)
	}
	return nil, errNoIndex
}

func (v storeView) ListIndexFuncValues(name string) []string {
	if ix := v.indexer(); ix != nil {
		return ix.ListIndexFuncValues(name)
	}
	return nil
}

func (v storeView) ByIndex(name, value string) ([]any, error) {
	if ix := v.indexer(); ix != nil {
		return ix.ByIndex(name, value)
	}
	return nil, errNoIndex
}

func (v storeView) GetIndexers() cache.Indexers {
	if ix := v.indexer(); ix != nil {
		return ix.GetIndexers()
	}
	return cache.Indexers{}
}

func (v storeView) AddIndexers(indexers cache.Indexers) error { return v.s.addIndexers(indexers) }
