package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/wire"
)

// metaLW is the key informers' ListerWatcher: it asks the API server for
// object metadata (PartialObjectMetadata, in protobuf where the server
// speaks it, as client-go's metadata client does) and reads the responses
// with package wire, down to each object's digest and resource version
// (keyObject), without decoding objects. A List and a watch-list's initial
// events stream into the store's staged set (keyStore.stage) instead of
// being returned: the list that the reflector sees is empty, and its end
// replaces the store's set with the staged one.
//
// It issues the requests client-go's metadata client would, on the same
// HTTP client (so the same connection as the informer's freshness reads),
// and reports errors as client-go does (API status errors; a watch that
// cannot start for a connection that closed is an empty watch).
type metaLW struct {
	*collection
	store  *keyStore
	canary func(namespace, name string) bool
}

// collection sends the GETs of one resource's collection on the HTTP
// client of a client configuration, retried as client-go's rest client
// retries them; proto, when set, is told the HTTP major version of every
// answer (on HTTP/2 every request of the configuration shares one
// connection; on HTTP/1.1 each may take a connection of a pool, which a
// load balancer may have placed on another API server).
type collection struct {
	client   *http.Client
	base     *url.URL // the API server, with its path prefix
	path     string   // the resource's collection path
	resource schema.GroupResource
	proto    func(major int)
}

func newCollection(cfg *rest.Config, gvr schema.GroupVersionResource) (*collection, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	p := path.Join("/apis", gvr.Group, gvr.Version, gvr.Resource)
	if gvr.Group == "" {
		p = path.Join("/api", gvr.Version, gvr.Resource)
	}
	return &collection{client: client, base: base, path: p, resource: gvr.GroupResource()}, nil
}

// head reads the collection's current resource version with a consistent
// List of at most one item: a freshness read (see metadataHead).
func (c *collection) head(ctx context.Context) (string, error) {
	resp, err := c.request(ctx, metav1.ListOptions{Limit: 1}, acceptMetaList, false)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", c.statusError(resp)
	}
	defer resp.Body.Close()
	format, ok := wire.FormatOf(resp.Header.Get("Content-Type"))
	if !ok {
		return "", fmt.Errorf("list %s: the API server answered %q", c.resource, resp.Header.Get("Content-Type"))
	}
	lm, err := wire.DecodeList(resp.Body, format, wire.Fields{}, func(*wire.Meta) error { return nil })
	if err != nil {
		return "", fmt.Errorf("list %s: %w", c.resource, err)
	}
	return string(lm.ResourceVersion), nil
}

// The Accept headers of client-go's metadata client.
const (
	acceptMeta     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptMetaList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

func newMetaLW(cfg *rest.Config, gvr schema.GroupVersionResource, store *keyStore, canary func(namespace, name string) bool) (*metaLW, error) {
	c, err := newCollection(cfg, gvr)
	if err != nil {
		return nil, err
	}
	return &metaLW{collection: c, store: store, canary: canary}, nil
}

// List implements cache.Lister.
func (lw *metaLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// Watch implements cache.Watcher.
func (lw *metaLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// IsWatchListSemanticsUnSupported implements the watch-list opt-in of
// client-go's reflector: the API server streams lists.
func (lw *metaLW) IsWatchListSemanticsUnSupported() bool { return false }

// request sends a GET of the collection with options, retried as
// client-go's rest client retries it (see retried).
func (lw *collection) request(ctx context.Context, options metav1.ListOptions, accept string, watching bool) (*http.Response, error) {
	params, err := metav1.ParameterCodec.EncodeParameters(&options, metav1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	u := *lw.base
	u.Path = path.Join(u.Path, lw.path)
	u.RawQuery = params.Encode()
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", accept)
		if watching {
			// The API server compresses a watch-list's stream per flush, for
			// as long as the watch lasts: each event of its watch is then a
			// gzip stream of its own (both sides pay for it). A watch reads
			// its bytes as they come.
			req.Header.Set("Accept-Encoding", "identity")
		}
		resp, err := lw.client.Do(req)
		if resp != nil && lw.proto != nil {
			lw.proto(resp.ProtoMajor)
		}
		wait, again := retried(attempt, resp, err, watching)
		if !again {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// maxRetries is how many times client-go's rest client retries a request
// (rest.Request's default).
const maxRetries = 10

// retried reports whether client-go's rest client would send a request
// again after its attempt-th attempt got resp or err, and after how long:
// a connection that broke (for a watch, one that ended or timed out) after
// a second; a response of 429 or 5xx with an integer Retry-After after
// that many seconds; at most maxRetries times. So the key informer waits
// out an API server's restart as a controller's informer does, instead of
// ending its watch at once (which its reflector would answer with a
// relist, as a controller's does only once the retries ran out).
func retried(attempt int, resp *http.Response, err error, watching bool) (time.Duration, bool) {
	if attempt > maxRetries {
		return 0, false
	}
	if err != nil {
		retryable := utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err)
		if !watching {
			retryable = utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)
		}
		return time.Second, retryable
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	seconds, convErr := strconv.Atoi(resp.Header.Get("Retry-After"))
	if convErr != nil {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

// statusError is client-go's error for a response that is not a success:
// the Status it carries, or a generic error of its code.
func (lw *collection) statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if len(body) > 0 {
		obj, _, err := metainternalversionscheme.Codecs.UniversalDeserializer().Decode(body, &schema.GroupVersionKind{Version: "v1"}, nil)
		if s, ok := obj.(*metav1.Status); err == nil && ok && s.Status == metav1.StatusFailure {
			return apierrors.FromObject(s)
		}
	}
	message := "unknown"
	if ct := resp.Header.Get("Content-Type"); ct == "" || strings.HasPrefix(ct, "text/") {
		message = strings.TrimSpace(string(body[:min(len(body), 1024)]))
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodGet, schema.GroupResource{}, "", message, 0, true)
}

// ListWithContext lists one page, streaming its items into the store's
// staged set: the first page starts a new staged set, the last completes
// it. It returns the page without items (its resource version and continue
// token).
func (lw *metaLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	st := lw.store.current()
	if options.Continue == "" || st == nil {
		st = lw.store.stage()
	}
	resp, err := lw.request(ctx, options, acceptMetaList, false)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, lw.statusError(resp)
	}
	defer resp.Body.Close()
	format, ok := wire.FormatOf(resp.Header.Get("Content-Type"))
	if !ok {
		return nil, fmt.Errorf("list %s: the API server answered %q", lw.resource, resp.Header.Get("Content-Type"))
	}
	lm, err := wire.DecodeList(resp.Body, format, wire.Fields{}, func(m *wire.Meta) error {
		st.add(digestOf(m.Namespace, m.Name))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource, err)
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: string(lm.ResourceVersion), Continue: string(lm.Continue)}}
	if list.Continue == "" {
		st.done()
	}
	return list, nil
}

// WatchWithContext starts a watch. A watch-list's initial events go to a
// new staged set of the store, which its initial-events-end bookmark
// completes before the reflector sees it.
func (lw *metaLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	options.Watch = true
	ctx, cancel := context.WithCancel(ctx)
	resp, err := lw.request(ctx, options, acceptMeta, true)
	if err != nil {
		cancel()
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			// as client-go: the reflector watches again, without a relist
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		return nil, lw.statusError(resp)
	}
	format, ok := wire.FormatOf(resp.Header.Get("Content-Type"))
	if !ok {
		_ = resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("watch %s: the API server answered %q", lw.resource, resp.Header.Get("Content-Type"))
	}
	w := &metaWatch{
		lw: lw, body: resp.Body, cancel: cancel,
		dec: wire.NewWatchDecoder(resp.Body, format, wire.Fields{Annotation: heartbeatAnnotation}),
		out: make(chan watch.Event), done: make(chan struct{}),
	}
	if options.SendInitialEvents != nil && *options.SendInitialEvents {
		w.staging = lw.store.stage()
	}
	return w, nil
}

// metaWatch is a watch of metaLW: one goroutine reads the stream, makes a
// keyObject of each event and hands it to the reflector. An instrumented
// ListerWatcher observes its events in that goroutine (observeWith), so
// that instrumenting it costs no goroutine of its own.
type metaWatch struct {
	lw       *metaLW
	body     io.ReadCloser
	cancel   context.CancelFunc
	dec      *wire.WatchDecoder
	ev       wire.Event
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	start    sync.Once
	obs      watchObserver
	// staging receives the initial events of a watch-list until its
	// initial-events-end bookmark; nil: none (or no longer)
	staging *staging
}

var _ observedWatch = (*metaWatch)(nil)

// observeWith makes o observe every event before the reflector gets it,
// and the stream's end; call it before the first ResultChan.
func (w *metaWatch) observeWith(o watchObserver) {
	w.obs = o
	w.start.Do(func() { go w.run() })
}

func (w *metaWatch) ResultChan() <-chan watch.Event {
	w.start.Do(func() { go w.run() })
	return w.out
}

func (w *metaWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.cancel()
		_ = w.body.Close()
	})
}

func (w *metaWatch) run() {
	defer close(w.out)
	defer w.cancel()
	defer w.body.Close()
	closed := true // the stream ended by itself, not by Stop
	defer func() {
		if w.obs != nil {
			w.obs.ended(closed)
		}
	}()
	for {
		err := w.dec.Next(&w.ev)
		if err != nil {
			select {
			case <-w.done:
				closed = false
				return
			default:
			}
			ev, ok := decodeFailure(err)
			if !ok {
				return
			}
			if !w.deliver(ev) {
				closed = false
			}
			return
		}
		if w.staging != nil && w.ev.Type == wire.Added {
			w.staging.add(digestOf(w.ev.Meta.Namespace, w.ev.Meta.Name))
			continue
		}
		ev, err := w.event()
		if err != nil {
			ev, _ = decodeFailure(err)
		}
		if !w.deliver(ev) {
			closed = false
			return
		}
		if ev.Type == watch.Error {
			return
		}
	}
}

// deliver hands ev to the reflector, observed first; false: the watch
// was stopped.
func (w *metaWatch) deliver(ev watch.Event) bool {
	queued := false
	if w.obs != nil {
		queued = w.obs.observe(ev)
	}
	select {
	case w.out <- ev:
		return true
	case <-w.done:
		if w.obs != nil {
			w.obs.dropped(queued)
		}
		return false
	}
}

// event makes the watch.Event of the decoded event.
func (w *metaWatch) event() (watch.Event, error) {
	m := &w.ev.Meta
	var t watch.EventType
	switch w.ev.Type {
	case wire.Added:
		t = watch.Added
	case wire.Modified:
		t = watch.Modified
	case wire.Deleted:
		t = watch.Deleted
	case wire.Bookmark:
		t = watch.Bookmark
	case wire.Error:
		obj, _, err := metainternalversionscheme.Codecs.UniversalDeserializer().Decode(w.ev.Object, nil, nil)
		if err != nil {
			return watch.Event{}, fmt.Errorf("unable to decode watch event: %w", err)
		}
		return watch.Event{Type: watch.Error, Object: obj}, nil
	}
	var k *keyObject
	if t == watch.Bookmark {
		k = newKeyObject(digest{}, m.ResourceVersion)
		k.initEnd = m.InitialEventsEnd
		if k.initEnd && w.staging != nil {
			w.staging.done()
			w.staging = nil
		}
	} else {
		k = newKeyObject(digestOf(m.Namespace, m.Name), m.ResourceVersion)
		k.canary = w.lw.canary != nil && w.lw.canary(unsafeString(m.Namespace), unsafeString(m.Name))
		if k.canary {
			k.stamp = heartbeatOf(unsafeString(m.Annotation))
		}
	}
	return watch.Event{Type: t, Object: k}, nil
}

// unsafeString views b as a string for a comparison that does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// watchDecodingReporter reports a stream that cannot be read as client-go
// does: an error event of an internal error.
var watchDecodingReporter = apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")

// decodeFailure returns the event client-go's stream watcher delivers when
// reading the stream fails, and false when it delivers none (the stream
// ended, or its connection did).
func decodeFailure(err error) (watch.Event, bool) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return watch.Event{}, false
	case utilnet.IsProbableEOF(err), utilnet.IsTimeout(err):
		return watch.Event{}, false
	}
	return watch.Event{Type: watch.Error, Object: watchDecodingReporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", err))}, true
}
