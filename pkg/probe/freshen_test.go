package probe

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// An informer of your own (Instrument) gets its freshness reads through its
// own ListerWatcher, so they take its connection and reach the API server
// whose watch cache feeds it. Through the head probe's connection they
// reached whichever server that one holds: with two API servers, a quiet
// resource's cache behind the operator's connection never caught up, and
// its staleness grew to etcd's progress-notify interval while its store
// missed nothing (simulation seed 900229: 94.9 s, truth 0), its RV lag to
// the writes elsewhere after a stuck cache (seed 901189: 2,083 revisions).
func TestAnInstrumentedInformerReadsThroughItsOwnListerWatcher(t *testing.T) {
	var lists []metav1.ListOptions
	lw := &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			lists = append(lists, o)
			return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	// the head probe's server: a read that reaches it fails the test
	m := New(Options{HeadProbe: &rest.Config{Host: "http://127.0.0.1:1"}})
	m.Instrument(testGVR("configmaps"), lw, func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	})
	in := m.resourceOf("configmaps").informerList()[0]
	read := in.hook().freshen
	if read == nil {
		t.Fatal("an instrumented informer has no freshness read")
	}
	rv, err := read(t.Context())
	if err != nil || rv != "42" {
		t.Fatalf("freshness read: %q, %v; want the RV its ListerWatcher answered", rv, err)
	}
	if len(lists) != 1 || lists[0].Limit != 1 || lists[0].ResourceVersion != "" {
		t.Fatalf("the ListerWatcher saw lists %+v; want one consistent list of limit 1", lists)
	}
	if in.readsOwn() {
		t.Error("the monitor cannot see the protocol of a connection it did not build: the proofs must not count on the reads")
	}
}

// #39, premise 2 (simulation corpus seed 351362: events on an etcd of
// their own listed first, two API servers, etcd's 10-minute progress
// notify): configmaps, contradicted into an RV space of its own, lost what
// its informers had proved (the RV they held belonged to the old space),
// and an informer with no RV known sent no freshness read. On a server
// whose configmaps cache nobody else read, that cache then moved only at
// etcd's progress notification 10 minutes later; no bookmark came before
// (the API server sends none at or below a watch's RV), so the store's
// staleness stayed unknown for 10 minutes, then its first sessions
// without a read before their bookmark taught it a 116 s proof period
// while it missed nothing. A read is what moves a quiet cache to its next
// bookmark, which gives the informer an RV again: it goes out with none
// known.
func TestAStoreWhoseSpaceMovedStillReads(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			w := newWorld(t, 1000)
			reads := 0
			w.mon.freshenWith(w.is, func(context.Context) (string, error) {
				reads++
				return strconv.FormatUint(w.rv, 10), nil
			}, own)
			w.probe(0)
			w.sync(0.1)
			w.probe(5)
			w.mon.split(headSource{resource: w.tr.name, read: w.headFunc}, w.tr.space.Load())
			if rv := w.is.heldRV(); rv != 0 {
				t.Fatalf("RV %d after the move to a space of its own; want none known (the test's premise)", rv)
			}
			for s := 10.0; s <= 60; s += 5 {
				w.others(10)
				w.probe(s)
				w.freshen(s)
			}
			if reads == 0 {
				t.Errorf("no freshness read in the minute after its space moved: its quiet cache waits for etcd's progress notification")
			}
		})
	}
}
