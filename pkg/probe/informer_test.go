package probe

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// objectsWorld is a scripted resource for the key informer: a set of
// objects the test changes, served by List and by streaming watch-lists,
// and the open watch, through which the test sends events.
type objectsWorld struct {
	mu    sync.Mutex
	items map[string]*metav1.PartialObjectMetadata // by namespace/name
	rv    int
	live  chan *watch.FakeWatcher // every watch opened, in order
	// noWatchList refuses streaming watch-lists, so the informer lists.
	noWatchList bool
}

func newObjectsWorld() *objectsWorld {
	return &objectsWorld{items: map[string]*metav1.PartialObjectMetadata{}, rv: 100, live: make(chan *watch.FakeWatcher, 16)}
}

// put creates or changes an object without telling any watch (as while a
// watch is down); it returns the object at its new RV.
func (w *objectsWorld) put(ns, name string) *metav1.PartialObjectMetadata {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rv++
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(w.rv)}}
	w.items[ns+"/"+name] = o
	return o.DeepCopy()
}

// drop deletes an object without telling any watch; it returns the object
// as a delete event carries it.
func (w *objectsWorld) drop(ns, name string) *metav1.PartialObjectMetadata {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rv++
	o := w.items[ns+"/"+name]
	delete(w.items, ns+"/"+name)
	o = o.DeepCopy()
	o.ResourceVersion = strconv.Itoa(w.rv)
	return o
}

func (w *objectsWorld) lw() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(w.rv)}}
			for _, o := range w.items {
				list.Items = append(list.Items, *o.DeepCopy())
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			watchList := o.SendInitialEvents != nil && *o.SendInitialEvents
			if watchList && w.noWatchList {
				return nil, apierrors.NewBadRequest("watch-list is not supported here")
			}
			fw := watch.NewFakeWithChanSize(len(w.items)+512, false)
			if watchList {
				for _, obj := range w.items {
					fw.Add(obj.DeepCopy())
				}
				fw.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
					ResourceVersion: strconv.Itoa(w.rv),
					Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
				}})
			}
			w.live <- fw
			return fw, nil
		},
	}
}

// The exporter's key informer counts objects through adds and deletes
// delivered by the watch, and through deletes that happened while its watch
// was down, which only the relist's comparison with its store reveals; its
// store holds no object names.
func TestKeyInformerCountsAndDetectsDeletes(t *testing.T) {
	w := newObjectsWorld()
	for i := range 3 {
		w.put("ns-a", "obj-"+strconv.Itoa(i))
	}
	w.put("ns-b", "obj-0") // same name, another namespace: another object
	inf, counted := w.runKeyInformer(t, func(w *objectsWorld, m *Monitor, r *resource) cacheInformer { return m.keyInformer(w.lw(), r, nil) })
	expect := func(n int, what string) {
		t.Helper()
		if w.count() != n {
			t.Fatalf("the test's world holds %d objects, the test expects %d", w.count(), n)
		}
		counted(what)
	}
	expect(4, "the initial objects counted")
	watcher := <-w.live

	watcher.Add(w.put("ns-a", "obj-3"))
	expect(5, "an added object counted")
	watcher.Modify(w.put("ns-a", "obj-1"))
	watcher.Delete(w.drop("ns-a", "obj-0"))
	expect(4, "a deleted object uncounted, a modified one counted once")

	// While the watch is down, one object goes and another comes; the
	// watch ends with 410 Gone and the informer relists.
	w.drop("ns-b", "obj-0")
	w.drop("ns-a", "obj-2")
	w.put("ns-c", "obj-9")
	watcher.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	watcher.Stop()
	expect(3, "deletes missed while the watch was down detected at the relist")

	for _, k := range inf.GetStore().ListKeys() {
		if strings.Contains(k, "obj-") || strings.Contains(k, "ns-") {
			t.Errorf("store key %q holds an object name", k)
		}
	}
}

// The key informer's object count equals the true number of objects through
// a random history of creates, updates and deletes, some delivered by the
// watch and some made while the watch was down and found by the relist
// (streamed watch-list or List), over names that differ in one character,
// share prefixes or repeat across namespaces.
func TestKeyInformerCountsRandomHistory(t *testing.T) {
	for _, tc := range []struct {
		name        string
		noWatchList bool
	}{{"watch-list", false}, {"list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			testKeyInformerCountsRandomHistory(t, tc.noWatchList, func(w *objectsWorld, m *Monitor, r *resource) cacheInformer {
				return m.keyInformer(w.lw(), r, nil)
			})
		})
	}
}

type cacheInformer = cache.SharedIndexInformer

// buildKeyInformer builds a key informer of w for r.
type buildKeyInformer func(w *objectsWorld, m *Monitor, r *resource) cacheInformer

func testKeyInformerCountsRandomHistory(t *testing.T, noWatchList bool, build buildKeyInformer) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 18))
	w := newObjectsWorld()
	w.noWatchList = noWatchList
	namespaces := []string{"a", "ab", "team-1", "team-10", "kube-system"}
	name := func() (string, string) {
		return namespaces[rng.IntN(len(namespaces))], "obj-" + strconv.Itoa(rng.IntN(400))
	}
	for range 300 {
		w.put(name())
	}
	_, counted := w.runKeyInformer(t, build)
	counted("the initial objects counted")
	// change randomly: create or update (put) or delete (drop) one
	// object; returns the event a watch would deliver
	change := func() watch.Event {
		ns, n := name()
		if w.has(ns, n) && rng.IntN(2) == 0 {
			return watch.Event{Type: watch.Deleted, Object: w.drop(ns, n)}
		}
		if w.has(ns, n) {
			return watch.Event{Type: watch.Modified, Object: w.put(ns, n)}
		}
		return watch.Event{Type: watch.Added, Object: w.put(ns, n)}
	}
	// two relists: the reflector backs off before each further one
	for round := range 2 {
		watcher := <-w.live
		for range 300 {
			e := change()
			watcher.Action(e.Type, e.Object)
		}
		counted("round " + strconv.Itoa(round) + ": the watched changes counted")
		for range 150 { // while the watch is down
			change()
		}
		watcher.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		watcher.Stop()
		counted("round " + strconv.Itoa(round) + ": the changes missed while the watch was down counted at the relist")
	}
}

// runKeyInformer runs a key informer of w until the test ends; counted
// waits until the informer synced and both its object count and its store
// hold as many objects as w.
func (w *objectsWorld) runKeyInformer(t *testing.T, build buildKeyInformer) (inf cache.SharedIndexInformer, counted func(what string)) {
	m := New(Options{})
	tr := m.track(testGVR("configmaps"), "")
	inf = build(w, m, tr)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	return inf, func(what string) {
		t.Helper()
		waitUntil(t, what, func() bool {
			want := w.count()
			return inf.HasSynced() && int(tr.informerList()[0].objects.Load()) == want && len(inf.GetStore().ListKeys()) == want
		})
	}
}

func (w *objectsWorld) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.items)
}

func (w *objectsWorld) has(ns, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.items[ns+"/"+name]
	return ok
}

// objectKey gives distinct objects distinct keys, also where namespace and
// name split one string differently, and one object always the same key.
func TestObjectKeyDistinct(t *testing.T) {
	seen := map[string]string{}
	for i := range 100_000 {
		for _, id := range [][2]string{
			{"team-" + strconv.Itoa(i%97), "checkout-config-" + strconv.Itoa(i)},
			{"team-" + strconv.Itoa(i%97) + "c", "heckout-config-" + strconv.Itoa(i)},
			{"", "node-" + strconv.Itoa(i)},
		} {
			o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: id[0], Name: id[1]}}
			k, err := objectKey(o)
			if err != nil {
				t.Fatal(err)
			}
			key := k.(*keyObject).GetName()
			if storeKey, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(k); storeKey != key {
				t.Fatalf("the store keys %v by %q, not its digest", id, storeKey)
			}
			if len(key) != keyBytes {
				t.Fatalf("key of %v is %d bytes, want %d", id, len(key), keyBytes)
			}
			if again, _ := objectKey(o.DeepCopy()); again.(*keyObject).GetName() != key {
				t.Fatalf("%v keyed twice differently", id)
			}
			if prev, dup := seen[key]; dup {
				t.Fatalf("%v and %s share a key", id, prev)
			}
			seen[key] = id[0] + "/" + id[1]
		}
	}
}
