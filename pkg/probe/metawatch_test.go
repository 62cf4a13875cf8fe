package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"
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
	lw := cache.ToListerWatcherWithContext(w.lw())
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
			obj, err := lw.ListWithContext(req.Context(), opts)
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
		watcher, err := lw.WatchWithContext(req.Context(), opts)
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
					inf, err := m.newKeyInformer(cfg, testGVR("configmaps"), r)
					if err != nil {
						t.Fatal(err)
					}
					return inf
				})
			})
		}
	}
}

// The key informer's watch requests are retried as client-go's metadata
// client retries them, the ground truth: against a server that fails the
// first requests (connections closed before a response, 429 and 503 with
// Retry-After, 500 and 410 without), both send as many requests and end
// alike: a watch that delivers, a watch that ends at once (the reflector
// then relists), or the same API error.
func TestMetaWatchRetriesAsClientGo(t *testing.T) {
	type failure func(rw http.ResponseWriter) // answers one failed attempt
	closeConn := func(rw http.ResponseWriter) {
		conn, _, err := rw.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
	status := func(code int, retryAfter string) failure {
		return func(rw http.ResponseWriter) {
			if retryAfter != "" {
				rw.Header().Set("Retry-After", retryAfter)
			}
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(code)
			_, _ = fmt.Fprintf(rw, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"failed","code":%d}`, code)
		}
	}
	for _, tc := range []struct {
		name  string
		fails int // attempts that fail before the server answers
		fail  failure
	}{
		{"connection closed twice", 2, closeConn},
		{"503 Retry-After 0 three times", 3, status(http.StatusServiceUnavailable, "0")},
		{"429 Retry-After 0 once", 1, status(http.StatusTooManyRequests, "0")},
		{"503 Retry-After 0 always", 1000, status(http.StatusServiceUnavailable, "0")},
		{"500 without Retry-After", 1, status(http.StatusInternalServerError, "")},
		{"410", 1, status(http.StatusGone, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outcome := func(watchOf func(cfg *rest.Config) (watch.Interface, error)) (string, int) {
				var requests atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
					if int(requests.Add(1)) <= tc.fails {
						tc.fail(rw)
						return
					}
					rw.Header().Set("Content-Type", "application/json;stream=watch")
					_, _ = io.WriteString(rw, `{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}}`+"\n")
					rw.(http.Flusher).Flush()
					<-req.Context().Done()
				}))
				defer srv.Close()
				w, err := watchOf(&rest.Config{Host: srv.URL})
				if err != nil {
					var s apierrors.APIStatus
					if errors.As(err, &s) {
						return fmt.Sprintf("error %d", s.Status().Code), int(requests.Load())
					}
					return "error " + err.Error(), int(requests.Load())
				}
				defer w.Stop()
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						return "ended at once", int(requests.Load())
					}
					return "delivers " + string(ev.Type), int(requests.Load())
				case <-time.After(30 * time.Second):
					return "nothing within 30s", int(requests.Load())
				}
			}
			gvr := testGVR("configmaps")
			want, wantRequests := outcome(func(cfg *rest.Config) (watch.Interface, error) {
				c, err := metadata.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c.Resource(gvr).Watch(context.Background(), metav1.ListOptions{})
			})
			got, gotRequests := outcome(func(cfg *rest.Config) (watch.Interface, error) {
				lw, err := newMetaLW(cfg, gvr, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			})
			t.Logf("client-go: %s after %d requests; key informer: %s after %d", want, wantRequests, got, gotRequests)
			if got != want || gotRequests != wantRequests {
				t.Errorf("key informer's watch: %s after %d requests, client-go's: %s after %d", got, gotRequests, want, wantRequests)
			}
		})
	}
}
