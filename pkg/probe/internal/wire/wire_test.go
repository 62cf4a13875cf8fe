package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/wire"
)

// The wire is what apimachinery's own serializers write, as the API
// server's are: the tests encode random objects with them and read them
// back through package wire, byte by byte as well as at once.

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

var codecs = metainternalversionscheme.Codecs

// heartbeat is the annotation the decoders of the round-trip tests read
// (the canary's, in the probe): Meta.Annotation must carry its value.
const heartbeat = "rvsync.io/heartbeat"

var withHeartbeat = wire.Fields{Annotation: heartbeat}

func serializerFor(t testing.TB, media string) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		t.Fatalf("no serializer for %s", media)
	}
	return info
}

// randomObject returns PartialObjectMetadata with what objects carry:
// labels, annotations, owner references, finalizers, managed fields, and
// names and namespaces that need escaping in JSON now and then.
func randomObject(rng *rand.Rand, i int) *metav1.PartialObjectMetadata {
	names := []string{"obj-" + strconv.Itoa(i), "weird\"name\\" + strconv.Itoa(i), "uni-é-✓-" + strconv.Itoa(i), "tab\t<&>" + strconv.Itoa(i)}
	o := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              names[rng.IntN(len(names))],
			Namespace:         []string{"", "default", "team-" + strconv.Itoa(rng.IntN(9)), "ns/\"x\""}[rng.IntN(4)],
			UID:               types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), i)),
			ResourceVersion:   strconv.FormatUint(rng.Uint64N(1<<40)+1, 10),
			Generation:        rng.Int64N(1 << 33),
			CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000+int64(i), 0)),
			Labels:            map[string]string{"app.kubernetes.io/name": "x", "generation": "3"},
			Annotations:       map[string]string{"note": "metadata {\"resourceVersion\":\"1\"}", "k8s.io/initial-events-end-x": "true"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "name", UID: "uid"}},
			Finalizers:        []string{"f/1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:name":{},"f:resourceVersion":{}}}`),
			}},
		},
	}
	if rng.IntN(3) == 0 {
		o.Annotations[metav1.InitialEventsAnnotationKey] = []string{"true", "false"}[rng.IntN(2)]
	}
	if rng.IntN(2) == 0 {
		o.Annotations[heartbeat] = []string{strconv.FormatInt(rng.Int64(), 10), "", "esc\"aped\\✓"}[rng.IntN(3)]
	}
	if rng.IntN(5) == 0 {
		o.Annotations = nil
		o.Generation = 0
	}
	return o
}

// oneByteReader returns at most n bytes per Read.
type oneByteReader struct {
	r io.Reader
	n int
}

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), o.n)]) }

func checkMeta(t *testing.T, what string, got *wire.Meta, want *metav1.PartialObjectMetadata) {
	t.Helper()
	if string(got.Name) != want.Name || string(got.Namespace) != want.Namespace || string(got.UID) != string(want.UID) ||
		string(got.ResourceVersion) != want.ResourceVersion || got.Generation != want.Generation ||
		got.InitialEventsEnd != (want.Annotations[metav1.InitialEventsAnnotationKey] == "true") ||
		string(got.Annotation) != want.Annotations[heartbeat] {
		t.Fatalf("%s: read %q/%q uid %q rv %q gen %d end %v heartbeat %q; want %q/%q uid %q rv %q gen %d end %v heartbeat %q", what,
			got.Namespace, got.Name, got.UID, got.ResourceVersion, got.Generation, got.InitialEventsEnd, got.Annotation,
			want.Namespace, want.Name, want.UID, want.ResourceVersion, want.Generation, want.Annotations[metav1.InitialEventsAnnotationKey] == "true", want.Annotations[heartbeat])
	}
}

// watchStream encodes events as the API server streams them in media.
func watchStream(t testing.TB, media string, events []watch.Event) []byte {
	t.Helper()
	info := serializerFor(t, media)
	var buf bytes.Buffer
	enc := restclientwatch.NewEncoder(
		streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer),
		codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion))
	for _, ev := range events {
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func randomEvents(rng *rand.Rand, n int) []watch.Event {
	types := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark}
	var events []watch.Event
	for i := range n {
		events = append(events, watch.Event{Type: types[rng.IntN(len(types))], Object: randomObject(rng, i)})
	}
	events = append(events, watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}})
	return events
}

func TestWatchDecoder(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		for _, chunk := range []int{1, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", media, chunk), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(chunk)))
				events := randomEvents(rng, 200)
				body := watchStream(t, media, events)
				f, ok := wire.FormatOf(media + ";stream=watch")
				if !ok {
					t.Fatal("format not recognised")
				}
				d := wire.NewWatchDecoder(&oneByteReader{bytes.NewReader(body), chunk}, f, withHeartbeat)
				var ev wire.Event
				for i, want := range events {
					if err := d.Next(&ev); err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
					if got := ev.Type; watchType(got) != want.Type {
						t.Fatalf("event %d: type %v, want %v", i, got, want.Type)
					}
					if want.Type == watch.Error {
						obj, _, err := codecs.UniversalDeserializer().Decode(ev.Object, nil, nil)
						if err != nil {
							t.Fatalf("error event's object: %v", err)
						}
						if s, ok := obj.(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
							t.Fatalf("error event's object: %#v", obj)
						}
						continue
					}
					checkMeta(t, fmt.Sprintf("event %d", i), &ev.Meta, want.Object.(*metav1.PartialObjectMetadata))
				}
				if err := d.Next(&ev); err != io.EOF {
					t.Fatalf("after the last event: %v, want EOF", err)
				}
			})
		}
	}
}

func watchType(t wire.EventType) watch.EventType {
	return map[wire.EventType]watch.EventType{wire.Added: watch.Added, wire.Modified: watch.Modified, wire.Deleted: watch.Deleted, wire.Bookmark: watch.Bookmark, wire.Error: watch.Error}[t]
}

// A stream cut inside an event ends with io.ErrUnexpectedEOF, never with a
// partial event; a broken body's error comes through.
func TestWatchDecoderCutStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		body := watchStream(t, media, randomEvents(rng, 3))
		f, _ := wire.FormatOf(media)
		for cut := 1; cut < len(body); cut += 13 {
			d := wire.NewWatchDecoder(bytes.NewReader(body[:cut]), f, wire.Fields{})
			var ev wire.Event
			var err error
			for err == nil {
				err = d.Next(&ev)
			}
			if err != io.ErrUnexpectedEOF && err != io.EOF {
				t.Fatalf("%s cut at %d: %v", media, cut, err)
			}
		}
		broken := errors.New("connection reset by peer")
		d := wire.NewWatchDecoder(io.MultiReader(bytes.NewReader(body[:len(body)/2]), errReader{broken}), f, wire.Fields{})
		var ev wire.Event
		var err error
		for err == nil {
			err = d.Next(&ev)
		}
		if !errors.Is(err, broken) {
			t.Fatalf("%s: broken body read as %v", media, err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func listBody(t testing.TB, media string, list *metav1.PartialObjectMetadataList) []byte {
	t.Helper()
	info := serializerFor(t, media)
	var buf bytes.Buffer
	if err := codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeList(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		for _, n := range []int{0, 1, 500} {
			for _, chunk := range []int{1, 5, 1 << 20} {
				t.Run(fmt.Sprintf("%s/%d/%d", media, n, chunk), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(n*chunk)))
					list := &metav1.PartialObjectMetadataList{
						TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
						ListMeta: metav1.ListMeta{ResourceVersion: "123456", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ"},
					}
					if n == 1 {
						list.Continue = "" // the last page
					}
					for i := range n {
						list.Items = append(list.Items, *randomObject(rng, i))
					}
					body := listBody(t, media, list)
					f, _ := wire.FormatOf(media)
					i := 0
					lm, err := wire.DecodeList(&oneByteReader{bytes.NewReader(body), chunk}, f, withHeartbeat, func(m *wire.Meta) error {
						if i >= n {
							t.Fatalf("item %d of %d", i, n)
						}
						checkMeta(t, fmt.Sprintf("item %d", i), m, &list.Items[i])
						i++
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if i != n {
						t.Fatalf("read %d items of %d", i, n)
					}
					if string(lm.ResourceVersion) != list.ResourceVersion || string(lm.Continue) != list.Continue {
						t.Fatalf("list meta rv %q continue %q, want %q %q", lm.ResourceVersion, lm.Continue, list.ResourceVersion, list.Continue)
					}
				})
			}
		}
	}
}

// A list cut anywhere is an error, not a shorter list.
func TestDecodeListCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}
		for i := range 3 {
			list.Items = append(list.Items, *randomObject(rng, i))
		}
		body := listBody(t, media, list)
		f, _ := wire.FormatOf(media)
		for cut := 0; cut < len(body); cut += 11 {
			if _, err := wire.DecodeList(bytes.NewReader(body[:cut]), f, wire.Fields{}, func(*wire.Meta) error { return nil }); err == nil {
				t.Fatalf("%s cut at %d of %d: no error", media, cut, len(body))
			}
		}
	}
}

// The observed generation is read at its path in JSON objects of any kind;
// a missing one, a fraction or a string is not one.
func TestObservedGeneration(t *testing.T) {
	for _, tc := range []struct {
		object   string
		observed int64
		has      bool
	}{
		{`{"metadata":{"name":"a","generation":4},"spec":{"observedGeneration":9},"status":{"replicas":1,"observedGeneration":3}}`, 3, true},
		{`{"status":{"observedGeneration":7},"metadata":{"name":"a"}}`, 7, true},
		{`{"metadata":{"name":"a"},"status":{}}`, 0, false},
		{`{"metadata":{"name":"a"},"status":null}`, 0, false},
		{`{"metadata":{"name":"a"},"status":{"observedGeneration":"3"}}`, 0, false},
		{`{"metadata":{"name":"a"},"status":{"observedGeneration":3.5}}`, 0, false},
		{`{"metadata":{"name":"a"},"status":{"conditions":[{"observedGeneration":2}]}}`, 0, false},
	} {
		stream := `{"type":"MODIFIED","object":` + tc.object + "}\n"
		d := wire.NewWatchDecoder(strings.NewReader(stream), wire.JSON, wire.Fields{Observed: []string{"status", "observedGeneration"}})
		var ev wire.Event
		if err := d.Next(&ev); err != nil {
			t.Fatalf("%s: %v", tc.object, err)
		}
		if ev.Meta.HasObserved != tc.has || ev.Meta.ObservedGeneration != tc.observed || string(ev.Meta.Name) != "a" {
			t.Errorf("%s: observed %d (%v), name %q; want %d (%v)", tc.object, ev.Meta.ObservedGeneration, ev.Meta.HasObserved, ev.Meta.Name, tc.observed, tc.has)
		}
	}
}

// Malformed input is an error, never a panic or a partial event.
func FuzzWatchDecoder(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		f.Add(watchStream(f, media, randomEvents(rng, 2)), media == mediaJSON)
	}
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"\u00e9\ud83d\ude00","annotations":{"k8s.io/initial-events-end":"true"}}}}`), true)
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		format := wire.Protobuf
		if json {
			format = wire.JSON
		}
		d := wire.NewWatchDecoder(bytes.NewReader(body), format, wire.Fields{Observed: []string{"status", "observedGeneration"}})
		var ev wire.Event
		for range 100 {
			if err := d.Next(&ev); err != nil {
				return
			}
		}
	})
}

func FuzzDecodeList(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"}}
		list.Items = append(list.Items, *randomObject(rng, 1), *randomObject(rng, 2))
		f.Add(listBody(f, media, list), media == mediaJSON)
	}
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		format := wire.Protobuf
		if json {
			format = wire.JSON
		}
		_, _ = wire.DecodeList(bytes.NewReader(body), format, wire.Fields{}, func(*wire.Meta) error { return nil })
	})
}

// BenchmarkWatchDecoder reads an event of a ConfigMap's metadata as the
// API server sends it to a metadata informer.
func BenchmarkWatchDecoder(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	o := randomObject(rng, 1)
	o.Name, o.Namespace = "checkout-config-1234", "team-7"
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		b.Run(media, func(b *testing.B) {
			frame := watchStream(b, media, []watch.Event{{Type: watch.Modified, Object: o}})
			f, _ := wire.FormatOf(media)
			r := &repeatReader{frame: frame}
			d := wire.NewWatchDecoder(r, f, wire.Fields{})
			var ev wire.Event
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Next(&ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// repeatReader returns one frame per Read, forever.
type repeatReader struct{ frame []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.frame), nil }
