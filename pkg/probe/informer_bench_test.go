package probe

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"
)

// storeObjects is how many objects BenchmarkMetadataInformerStore caches.
var storeObjects = flag.Int("store-objects", 20000, "objects cached by BenchmarkMetadataInformerStore")

// storeHeapProfile names the heap profiles BenchmarkMetadataInformerStore
// writes while each case's informer holds its objects (file name
// <storeHeapProfile>.<case>; empty: none). Read them with
// go tool pprof -sample_index inuse_space -top.
var storeHeapProfile = flag.String("store-heapprofile", "", "write a heap profile per case of BenchmarkMetadataInformerStore while its store is full")

// BenchmarkMetadataInformerStore reports the heap an informer holds per
// cached object (B/object): the key informer with its store of digests,
// fed by its own ListerWatcher from a server streaming a watch-list in
// protobuf; and, for comparison, client-go informers keeping digest keys
// (#18), "namespace/name" keys (before #18), slimmed metadata objects, and
// whole metadata as a plain metadata informer keeps it. Each object carries labels, an annotation and a
// managed-fields entry like a real ConfigMap, and a name of typical length
// (namespace and name 34 bytes). Run it once per case:
//
//	go test -run '^$' -bench MetadataInformerStore -benchtime 1x ./pkg/probe [-args -store-objects 500000 -store-heapprofile /tmp/store.heap]
func BenchmarkMetadataInformerStore(b *testing.B) {
	n := *storeObjects
	objs := make([]*metav1.PartialObjectMetadata, n)
	for i := range objs {
		ns := "team-" + strconv.Itoa(i%50) + "-prod"
		objs[i] = &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: "checkout-config-" + strconv.Itoa(1000000+i), ResourceVersion: strconv.Itoa(1000 + i),
				UID:         types.UID("0b5c9a3e-2f7d-4d8e-9c1a-" + strconv.Itoa(100000000000+i)),
				Labels:      map[string]string{"app.kubernetes.io/name": "rvsync-bench", "app.kubernetes.io/instance": ns},
				Annotations: map[string]string{"bench.rvsync.io/description": "object created by rvsync-bench"},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "rvsync-bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:payload":{},"f:version":{}},"f:metadata":{"f:annotations":{".":{},"f:bench.rvsync.io/description":{}},"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{}}}}`),
				}},
			},
		}
	}
	extra := objs[n-1].DeepCopy()
	extra.Name += "-extra"
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (kruntime.Object, error) {
			list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(1000 + n)}}
			for _, o := range objs {
				list.Items = append(list.Items, *o.DeepCopy())
			}
			return list, nil
		},
		// A streaming watch-list (client-go's default) sends every object,
		// then the initial-events-end bookmark; later watches stay quiet.
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents == nil || !*o.SendInitialEvents { // after a List
				w := watch.NewFake()
				go w.Add(extra.DeepCopy())
				return w, nil
			}
			// unbuffered, so that the watch itself holds no object
			w := watch.NewFake()
			go func() {
				for _, obj := range objs {
					w.Add(obj.DeepCopy())
				}
				w.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
					ResourceVersion: strconv.Itoa(1000 + n),
					Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
				}})
				// one more object after the sync, as churn brings: client-go's
				// FIFO then lets go of the array the initial sync filled
				w.Add(extra.DeepCopy())
			}()
			return w, nil
		},
	}
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc // of a client-go informer; nil: the key informer
	}{
		{"digest-store", nil},           // the key informer: its own store of digests, lists streamed into it (#31)
		{"digest-keys", objectKey},      // digests in a client-go informer's store (#18)
		{"name-keys", nameKey},          // "namespace/name" keys (before #18)
		{"slim-metadata", slimMetadata}, // slimmed metadata objects (earlier)
		{"whole-metadata", func(o any) (any, error) { return o, nil }}, // a plain metadata informer
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				perObject := storeBytesPerObject(b, func() (cache.SharedIndexInformer, func() int64) {
					m := New(Options{})
					t := m.track(testGVR("configmaps"), "")
					if tc.transform == nil {
						cfg := &rest.Config{Host: serveObjects(b, objs, extra).URL}
						inf, err := m.newKeyInformer(cfg, testGVR("configmaps"), t)
						if err != nil {
							b.Fatal(err)
						}
						return inf, t.informers[0].objects.Load
					}
					inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
					_ = inf.SetTransform(tc.transform)
					var counted atomic.Int64
					_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { counted.Add(1) }})
					return inf, counted.Load
				}, n)
				b.ReportMetric(perObject, "B/object")
			}
		})
	}
}

// serveObjects answers a metadata client's watch-list with objs in
// protobuf, one at a time as the API server streams them, then the
// initial-events-end bookmark and extra (one more object after the sync,
// as churn brings); the watch then stays open and quiet.
func serveObjects(b *testing.B, objs []*metav1.PartialObjectMetadata, extra *metav1.PartialObjectMetadata) *httptest.Server {
	codecs := metainternalversionscheme.Codecs
	info, _ := kruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
	encoder := codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("sendInitialEvents") != "true" {
			<-req.Context().Done() // no other request is answered
			return
		}
		rw.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		rw.WriteHeader(http.StatusOK)
		enc := restclientwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(rw), info.StreamSerializer.Serializer), encoder)
		send := func(t watch.EventType, o *metav1.PartialObjectMetadata) {
			c := o.DeepCopy()
			c.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			_ = enc.Encode(&watch.Event{Type: t, Object: c})
		}
		for _, o := range objs {
			send(watch.Added, o)
		}
		send(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: strconv.Itoa(1000 + len(objs)),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}})
		send(watch.Added, extra)
		rw.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	b.Cleanup(srv.Close)
	return srv
}

// storeBytesPerObject runs the informer made by newInformer until it synced
// n objects and received one more, and its event handler counted them all
// (counted returns the handler's count), and returns the live heap it
// added, per object. Waiting for the handler matters: until it caught up,
// client-go's listener buffers a notification per object (~90 B at
// 500,000 objects), which a steady state does not hold.
func storeBytesPerObject(b *testing.B, newInformer func() (cache.SharedIndexInformer, func() int64), n int) float64 {
	b.Helper()
	before := liveHeap()
	inf, counted := newInformer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	for !inf.HasSynced() || len(inf.GetStore().ListKeys()) < n+1 || counted() < int64(n+1) {
		time.Sleep(10 * time.Millisecond)
	}
	after := liveHeap()
	if *storeHeapProfile != "" {
		writeHeapProfile(b, *storeHeapProfile+"."+strings.ReplaceAll(b.Name(), "/", "."))
	}
	runtime.KeepAlive(inf)
	return float64(after-before) / float64(n+1)
}

// writeHeapProfile writes the heap profile as of the last GC to path.
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// nameKey is the transform the key informer used before objectKey's digest
// keys (#18): the object's "namespace/name" as a cache.ExplicitKey. Kept here as
// the benchmark's "before".
func nameKey(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		return cache.ExplicitKey(o.GetNamespace() + "/" + o.GetName()), nil
	}
	return obj, nil
}

// slimMetadata is the transform the key informer used before it stored keys:
// it strips metadata in place down to name, namespace, RV and generation.
// Kept here as the benchmark's "before".
func slimMetadata(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
		o.SetLabels(nil)
		o.SetAnnotations(nil)
		o.SetOwnerReferences(nil)
		o.SetFinalizers(nil)
		o.SetGenerateName("")
		o.SetUID("")
		o.SetCreationTimestamp(metav1.Time{})
	}
	return obj, nil
}

// BenchmarkObjectKey is objectKey's cost per event (the digest and its key).
func BenchmarkObjectKey(b *testing.B) {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-7-prod", Name: "checkout-config-1000007"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := objectKey(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyHash is the store queue's identity of an event's object
// (keyHash, on the wire side): a second SHA-256 of "namespace/name" per
// event next to objectKey's.
func BenchmarkKeyHash(b *testing.B) {
	b.ReportAllocs()
	var sum uint64
	for b.Loop() {
		sum += keyHash("team-7-prod", "checkout-config-1000007")
	}
	runtime.KeepAlive(sum)
}
