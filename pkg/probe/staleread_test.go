package probe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

func objMeta(uid, rv string) metav1.Object {
	return &metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}
}

func TestStaleReason(t *testing.T) {
	for _, c := range []struct {
		name          string
		cached, live  metav1.Object
		head, applied uint64 // the live read's head; the informers' highest RV
		want          string
		wantRV        uint64
	}{
		{"both absent", nil, nil, 10, 10, "", 0},
		{"same version", objMeta("a", "10"), objMeta("a", "10"), 10, 10, "", 0},
		{"cache newer: a write landed between the reads", objMeta("a", "12"), objMeta("a", "10"), 11, 12, "", 0},
		{"cache behind", objMeta("a", "9"), objMeta("a", "10"), 10, 9, catalog.StaleRVBehind, 10},
		{"re-created", objMeta("a", "9"), objMeta("b", "10"), 10, 9, catalog.StaleReplaced, 0},
		{"deleted live", objMeta("a", "9"), nil, 10, 9, catalog.StaleDeletedLive, 0},
		{"not yet cached", nil, objMeta("a", "10"), 10, 9, catalog.StaleMissing, 0},
		{"opaque versions: identity only", objMeta("a", "x1"), objMeta("a", "x2"), 0, 0, "", 0},
		// #26 row 9: a write landed between the live read and the cache read
		{"re-created after the live read", objMeta("b", "12"), objMeta("a", "10"), 11, 12, "", 0},
		{"created after the live read", objMeta("a", "12"), nil, 11, 12, "", 0},
		{"deleted after the live read", nil, objMeta("a", "10"), 11, 12, "", 0},
		{"live head unknown: identity judged", objMeta("b", "12"), objMeta("a", "10"), 0, 12, catalog.StaleReplaced, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, rv := staleReason(c.cached, c.live, c.head, c.applied)
			if got != c.want || rv != c.wantRV {
				t.Errorf("staleReason = %q, %d; want %q, %d", got, rv, c.want, c.wantRV)
			}
		})
	}
}

// #26 row 10: the delivery of an object's version is remembered however
// many events of other objects came since.
func TestDeliveries(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := newDeliveries()
	d.add(keyHash("ns", "target"), 7, t0)
	for i := range 100_000 { // a hot object's events
		d.add(keyHash("ns", "hot"), uint64(10+i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if at, ok := d.find(keyHash("ns", "target"), 7); !ok || !at.Equal(t0) {
		t.Errorf("find(target, 7) = %v, %v; want %v: lost to a hot object's events", at, ok, t0)
	}
	if _, ok := d.find(keyHash("ns", "target"), 8); ok {
		t.Error("found a version never delivered")
	}
	d.add(keyHash("ns", "target"), 9, t0.Add(time.Hour))
	if _, ok := d.find(keyHash("ns", "target"), 7); ok {
		t.Error("an older version is still the delivered one")
	}
	if at, ok := d.find(keyHash("ns", "target"), 9); !ok || !at.Equal(t0.Add(time.Hour)) {
		t.Errorf("find(target, 9) = %v, %v", at, ok)
	}
}

// newTestStaleReads returns a check on a fake clock whose live reads go
// to a fake metadata client holding objs.
func newTestStaleReads(t *testing.T, opts StaleReadOptions, objs ...*metav1.PartialObjectMetadata) (*StaleReads, *Monitor, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	m := New(Options{Clock: clk})
	c, err := m.StaleReads(opts, &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	sc := fake.NewTestScheme()
	if err := metav1.AddMetaToScheme(sc); err != nil {
		t.Fatal(err)
	}
	var ros []runtime.Object
	for _, o := range objs {
		ros = append(ros, o)
	}
	live := fake.NewSimpleMetadataClient(sc, ros...)
	// a live read's list is at the head, above every object: the fake's
	// tracker counts its own versions
	live.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		la := a.(k8stesting.ListAction)
		obj, err := live.Tracker().List(la.GetResource(), schema.GroupVersionKind{Group: "fake-metadata-client-group", Version: "v1"}, la.GetNamespace())
		if l, ok := obj.(*metav1.List); ok {
			l.ResourceVersion = "100"
		}
		return true, obj, err
	})
	c.live = live
	return c, m, clk
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func partial(name, uid, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv},
	}
}

// Check judges the cache read against the live one and counts by reason;
// the cache read's error is returned as it came.
func TestCheckCounts(t *testing.T) {
	c, m, _ := newTestStaleReads(t, StaleReadOptions{Fraction: 1, ReadsPerSecond: 1000, Burst: 1000},
		partial("fresh", "u1", "10"), partial("behind", "u2", "20"), partial("replaced", "u3new", "30"), partial("missing", "u4", "40"))
	read := func(o metav1.Object, err error) func() (metav1.Object, error) {
		return func() (metav1.Object, error) { return o, err }
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	for _, r := range []struct {
		name string
		read func() (metav1.Object, error)
	}{
		{"fresh", read(objMeta("u1", "10"), nil)},
		{"behind", read(objMeta("u2", "19"), nil)},
		{"replaced", read(objMeta("u3", "29"), nil)},
		{"missing", read(nil, notFound)},
		{"deleted", read(objMeta("u5", "50"), nil)},
		{"gone", read(nil, notFound)},
	} {
		err := c.Check(context.Background(), StaleRead{GVR: configMaps, Namespace: "ns", Name: r.name}, r.read)
		if (r.name == "missing" || r.name == "gone") != apierrors.IsNotFound(err) {
			t.Errorf("%s: Check returned %v", r.name, err)
		}
	}
	mt := m.metrics
	for reason, want := range map[string]float64{catalog.StaleRVBehind: 1, catalog.StaleReplaced: 1, catalog.StaleMissing: 1, catalog.StaleDeletedLive: 1} {
		if got := testutil.ToFloat64(mt.StaleReads.WithLabelValues("configmaps", reason)); got != want {
			t.Errorf("stale reads %s = %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(mt.StaleReadChecks.WithLabelValues("configmaps", catalog.ResultSuccess)); got != 6 {
		t.Errorf("checks = %v, want 6", got)
	}
}

// The live reads never exceed the token bucket, whatever the reconcile
// rate: over 10 s of 100 sampled reads/s at 5 reads/s and a burst of 2,
// exactly 5 × 10 + 2 are checked.
func TestCheckLiveReadLimit(t *testing.T) {
	c, m, clk := newTestStaleReads(t, StaleReadOptions{Fraction: 1, ReadsPerSecond: 5, Burst: 2}, partial("a", "u", "1"))
	cached := func() (metav1.Object, error) { return objMeta("u", "1"), nil }
	for range 1000 {
		_ = c.Check(context.Background(), StaleRead{GVR: configMaps, Namespace: "ns", Name: "a"}, cached)
		clk.Step(10 * time.Millisecond)
	}
	mt := m.metrics
	checked := testutil.ToFloat64(mt.StaleReadChecks.WithLabelValues("configmaps", catalog.ResultSuccess))
	limited := testutil.ToFloat64(mt.StaleReadChecks.WithLabelValues("configmaps", catalog.ResultRateLimited))
	if checked > 5*10+2 || checked < 5*10 || checked+limited != 1000 {
		t.Errorf("checked %v, rate limited %v of 1000 reads in 10s at 5/s burst 2; want at most 52 checked, the rest limited", checked, limited)
	}
}

// Sampled picks the configured fraction of reconcile IDs, the same answer
// for every read of one reconcile, none without an ID.
func TestSampledFraction(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range []float64{0.01, 0.1, 0.5, 1} {
		c, _, _ := newTestStaleReads(t, StaleReadOptions{Fraction: f})
		const n = 100_000
		hits := 0
		for range n {
			id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
			s := c.Sampled(id)
			if s != c.Sampled(id) {
				t.Fatalf("reconcile %s sampled and not", id)
			}
			if s {
				hits++
			}
		}
		if got := float64(hits) / n; got < f*0.9-0.002 || got > f*1.1+0.002 {
			t.Errorf("fraction %v: sampled %v of reconciles", f, got)
		}
		if c.Sampled("") {
			t.Errorf("fraction %v: a read outside any reconcile was sampled", f)
		}
	}
}

func TestStaleReadOptionsRejected(t *testing.T) {
	for _, o := range []StaleReadOptions{{Fraction: 1.5}, {Fraction: -0.1}, {ReadsPerSecond: -1}, {Burst: -1}, {Timeout: -time.Second}} {
		if _, err := New(Options{}).StaleReads(o, &rest.Config{Host: "https://127.0.0.1:1"}); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := New(Options{}).StaleReads(StaleReadOptions{}, nil); err == nil {
		t.Error("no client configuration accepted")
	}
}
