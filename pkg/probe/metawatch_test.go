package probe

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// serve answers a metadata client's lists and watches of w over HTTP, in
// media (JSON or protobuf), encoded by apimachinery's serializers as the
// API server encodes them: lists in pages of at most pageSize items when
// a limit is asked (continue tokens are offsets), watches and watch-lists
// as streams of w's watchers, and errors as Status responses.
func (w *objectsWorld) serve(t *testing.T, media string, pageSize int) *httptest.Server {
	codecs := metainternalversionscheme.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		t.Fatalf("no serializer for %s", media)
	}
	encoder := codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion)
	lw := w.lw()
	fail := func(rw http.ResponseWriter, err error) {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			status = apierrors.NewInternalError(err)
		}
		rw.Header().Set("Content-Type", media)
		rw.WriteHeader(int(status.Status().Code))
		_ = encoder.Encode(new(status.Status()), rw)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if !strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata") {
			t.Errorf("request without the metadata Accept header: %q", req.Header.Get("Accept"))
		}
		var opts metav1.ListOptions
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
			fail(rw, apierrors.NewBadRequest(err.Error()))
			return
		}
		if !opts.Watch {
			obj, err := lw.List(opts)
			if err != nil {
				fail(rw, err)
				return
			}
			list := obj.(*metav1.PartialObjectMetadataList)
			list.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}
			slices.SortFunc(list.Items, func(a, b metav1.PartialObjectMetadata) int {
				return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
			})
			if opts.Limit > 0 {
				from, _ := strconv.Atoi(opts.Continue)
				from = min(from, len(list.Items))
				to := min(from+min(int(opts.Limit), pageSize), len(list.Items))
				if to < len(list.Items) {
					list.Continue = strconv.Itoa(to)
				}
				list.Items = list.Items[from:to]
			}
			rw.Header().Set("Content-Type", media)
			_ = encoder.Encode(list, rw)
			return
		}
		watcher, err := lw.Watch(opts)
		if err != nil {
			fail(rw, err)
			return
		}
		defer watcher.Stop()
		rw.Header().Set("Content-Type", media+";stream=watch")
		rw.WriteHeader(http.StatusOK)
		flusher := rw.(http.Flusher)
		flusher.Flush()
		enc := restclientwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(rw), info.StreamSerializer.Serializer), encoder)
		for {
			select {
			case <-req.Context().Done():
				return
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					return
				}
				if o, isMeta := ev.Object.(*metav1.PartialObjectMetadata); isMeta {
					o.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
				}
				if err := enc.Encode(&ev); err != nil {
					return
				}
				flusher.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The key informer's own ListerWatcher, over HTTP in both formats the API
// server speaks: its count equals the true number of objects through a
// random history (see TestKeyInformerCountsRandomHistory), by streamed
// watch-lists and by paged lists, which stream into the store.
func TestMetaListerWatcherCountsRandomHistory(t *testing.T) {
	for _, media := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		for _, tc := range []struct {
			name        string
			noWatchList bool
		}{{"watch-list", false}, {"list", true}} {
			t.Run(media+"/"+tc.name, func(t *testing.T) {
				testKeyInformerCountsRandomHistory(t, tc.noWatchList, func(w *objectsWorld, m *Monitor, r *resource) cacheInformer {
					cfg := &rest.Config{Host: w.serve(t, media, 37).URL}
					reads, err := metadata.NewForConfig(cfg)
					if err != nil {
						t.Fatal(err)
					}
					inf, err := m.newKeyInformer(cfg, reads, testGVR("configmaps"), r)
					if err != nil {
						t.Fatal(err)
					}
					return inf
				})
			})
		}
	}
}
