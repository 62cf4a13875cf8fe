package sim

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// The lies of issue #26, each a history that reproduces it. Every one
// failed on the code of 2026-12-01 (the figures are in the issue's
// closing note); each must now hold every invariant.
var (
	// widgets in an etcd of its own whose revision is far above the
	// cluster's, left in the default RV space (an aggregated API with its
	// own storage, nobody told the exporter)
	resForeign = Watched{ResourceSpec: model.ResourceSpec{Group: "example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true, Etcd: "other"}}
	// samples from an extension API server with opaque resource versions,
	// left in the default RV space
	resOpaqueDefault = resMetrics
	// two informers of configmaps in one controller, each on its own
	// connection pinned to its own API server
	resTwoInformers = Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "ctrl-a", Embedded: true}, {Host: "ctrl-b", Embedded: true}}}
)

func init() { resOpaqueDefault.Space = "" }

var lies = []struct {
	row  int
	name string
	h    History
}{
	{1, "a resource of a higher foreign etcd takes the default space's head", History{Seed: 101, Duration: 20 * time.Minute, Background: 20,
		Setup: Setup{Resources: []Watched{resConfigMaps, resForeign},
			Etcds: []model.EtcdSpec{{Name: model.MainEtcd, Revision: 1000, ProgressNotify: 5 * time.Second}, {Name: "other", Revision: 9_150_000, ProgressNotify: 5 * time.Second}}},
		Loads:  []Load{{Resource: "configmaps", End: 20 * time.Minute, Rate: 2, Keys: 20}},
		Faults: []Fault{{Kind: Hang, Start: 5 * time.Minute, Dur: 6 * time.Second, Host: HostProbe, Resource: "configmaps"}},
	}},
	{2, "an opaque resource's answer makes the default space opaque for good", History{Seed: 102, Duration: 30 * time.Minute, Background: 20,
		Setup:  Setup{Resources: []Watched{resConfigMaps, resOpaqueDefault}},
		Loads:  []Load{{Resource: "configmaps", End: 30 * time.Minute, Rate: 2, Keys: 20}},
		Faults: []Fault{{Kind: Hang, Start: 4 * time.Minute, Dur: 6 * time.Second, Host: HostProbe, Resource: "configmaps"}, {Kind: Stuck, Start: 5 * time.Minute, Dur: 15 * time.Minute, Resource: "configmaps"}},
	}},
	{3, "a live quiet watch without bookmarks", History{Seed: 103, Duration: 20 * time.Minute, Background: 200,
		Setup: Setup{Resources: []Watched{resConfigMaps, resNoBookmark}},
	}},
	{4, "a stuck watch cache that still sends bookmarks", History{Seed: 104, Duration: 30 * time.Minute, Background: 100,
		Setup:  Setup{Resources: []Watched{resConfigMaps}},
		Loads:  []Load{{Resource: "configmaps", End: 30 * time.Minute, Rate: 1, Keys: 20}},
		Faults: []Fault{{Kind: Stuck, Start: 5 * time.Minute, Dur: 20 * time.Minute, Resource: "configmaps"}},
	}},
	{4, "a sparse resource whose every event is delivered late", History{Seed: 114, Duration: 20 * time.Minute, Background: 100,
		Setup:  Setup{Resources: []Watched{resWidgets}},
		Loads:  []Load{{Resource: "widgets.example.com", End: 20 * time.Minute, Rate: 1.0 / 30, Keys: 5}},
		Faults: []Fault{{Kind: Slow, Start: 3 * time.Minute, Dur: 17 * time.Minute, Host: HostInformers, Latency: 90 * time.Second}},
	}},
	{5, "the freshness proof period learns from an incident", History{Seed: 105, Duration: 50 * time.Minute, Background: 20,
		Setup: Setup{Resources: []Watched{resWidgets}},
		Loads: []Load{{Resource: "widgets.example.com", End: 50 * time.Minute, Rate: 1.0 / 20, Keys: 5}},
		Faults: []Fault{{Kind: Freeze, Start: 5 * time.Minute, Dur: 15 * time.Minute, Host: HostInformers},
			{Kind: Freeze, Start: 30 * time.Minute, Dur: 10 * time.Minute, Host: HostInformers}},
	}},
	{6, "two informers of a resource, one behind a stuck cache, the canary delivered to the other", History{Seed: 106, Duration: 30 * time.Minute, Background: 20,
		Setup:  Setup{Servers: 2, Resources: []Watched{resTwoInformers}, Canary: "configmaps", Pins: map[string]int{"ctrl-a": 0, "ctrl-b": 1}},
		Loads:  []Load{{Resource: "configmaps", End: 30 * time.Minute, Rate: 0.5, Keys: 20}},
		Faults: []Fault{{Kind: Stuck, Start: 5 * time.Minute, Dur: 20 * time.Minute, Server: 1, Resource: "configmaps"}},
	}},
	{7, "a canary write answered after a relist", History{Seed: 107, Duration: 40 * time.Minute, Background: 20,
		Setup: Setup{Resources: []Watched{resConfigMaps}, Canary: "configmaps"},
		Loads: []Load{{Resource: "configmaps", End: 40 * time.Minute, Rate: 2, Keys: 20}},
		Faults: []Fault{{Kind: Slow, Start: 3 * time.Minute, Dur: 37 * time.Minute, Host: HostCanary, Latency: 4 * time.Second},
			{Kind: Freeze, Start: 5 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true},
			{Kind: Freeze, Start: 10 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true},
			{Kind: Freeze, Start: 15 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true},
			{Kind: Freeze, Start: 20 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true},
			{Kind: Freeze, Start: 25 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true},
			{Kind: Freeze, Start: 30 * time.Minute, Dur: 90 * time.Second, Host: HostInformers, Reset: true}},
	}},
	{11, "a watched CRD is deleted", History{Seed: 111, Duration: 30 * time.Minute,
		Setup:  Setup{Resources: []Watched{resConfigMaps, resWidgets}},
		Faults: []Fault{{Kind: DeleteCRD, Start: 5 * time.Minute, Dur: 20 * time.Minute, Resource: "widgets.example.com"}},
	}},
	{12, "an etcd restore, the API servers restarted, then a short stall", History{Seed: 112, Duration: 30 * time.Minute, Background: 20,
		Setup: Setup{Resources: []Watched{resConfigMaps}, Canary: "configmaps"},
		Loads: []Load{{Resource: "configmaps", End: 30 * time.Minute, Rate: 1, Keys: 20}},
		Faults: []Fault{{Kind: Restore, Start: 5 * time.Minute, Dur: 20 * time.Second, Back: 5000, Reset: true},
			{Kind: Freeze, Start: 10 * time.Minute, Dur: 15 * time.Second, Host: HostInformers}},
	}},
}

// TestLies runs the corpus of lies: each history must hold every
// invariant.
func TestLies(t *testing.T) {
	for _, l := range lies {
		t.Run(l.name, func(t *testing.T) {
			chk, err := RunHistory(t, l.h)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range chk.Violations {
				if i == 5 {
					t.Logf("... %d more", len(chk.Violations)-5)
					break
				}
				t.Errorf("row %d: %v", l.row, v)
			}
		})
	}
}

// Row 8: one hot object on the exporter's key-digest informer, whose store
// is slow: the queue must show what waits, the informer RV only what the
// store applied.
func TestLieHotObjectOnKeyInformer(t *testing.T) {
	h := History{Seed: 108, Duration: 8 * time.Minute, Background: 10,
		Setup: Setup{Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{SlowStore: 10 * time.Millisecond}}}}},
		Loads: []Load{{Resource: "configmaps", Start: 5 * time.Minute, End: 5*time.Minute + 2*time.Second, Rate: 1000, Keys: 1}},
	}
	chk, err := RunHistory(t, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range chk.Violations[:min(5, len(chk.Violations))] {
		t.Errorf("row 8: %v", v)
	}
}

// staleReadWorld is configmaps watched by one embedded informer (a
// controller's cache, host "ctrl"), with the stale-read check on every
// reconcile; script runs the controller at 3 minutes with the check and
// a read of the cache. It returns the last scrape.
func staleReadWorld(t *testing.T, h History, script func(ctx context.Context, w *World, sr *probe.StaleReads, inf cache.SharedIndexInformer)) Scrape {
	t.Helper()
	h.Setup.Resources = []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "ctrl", Embedded: true}}}}
	var last Scrape
	err := Run(t, h.Setup, h.Seed, h.Duration, func(w *World) {
		h.script(w)
		sr, err := w.Monitor.StaleReads(probe.StaleReadOptions{Fraction: 1, ReadsPerSecond: 100, Burst: 100}, w.Config("ctrl"))
		if err != nil {
			t.Error(err)
			return
		}
		w.Go(func(ctx context.Context) {
			time.Sleep(3 * time.Minute)
			script(ctx, w, sr, w.Informers["configmaps"][0])
		})
	}, func(s Scrape) { last = s })
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// cached reads ns/name from an informer's store as a controller's client
// reads its cache.
func cached(inf cache.SharedIndexInformer, name string) (metav1.Object, error) {
	o, ok, err := inf.GetStore().GetByKey("ns/" + name)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return o.(metav1.Object), nil
}

// until waits, as a controller would, until cond holds (at most 10s).
func until(cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// Row 9: a write lands between the stale-read check's live read and its
// cache read (a delete, a create, a delete and re-create): the cache was
// newer than the live read, never stale.
func TestLieWriteBetweenLiveAndCacheRead(t *testing.T) {
	h := History{Seed: 109, Duration: 5 * time.Minute}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	last := staleReadWorld(t, h, func(ctx context.Context, w *World, sr *probe.StaleReads, inf cache.SharedIndexInformer) {
		c := w.Cluster
		c.Do(func(tx *model.Tx) {
			tx.Create("configmaps", "ns", "deleted", nil)
			tx.Create("configmaps", "ns", "recreated", nil)
		})
		until(func() bool { _, err := cached(inf, "recreated"); return err == nil })
		check := func(name string, write func(tx *model.Tx), landed func() bool) {
			_ = sr.Check(ctx, probe.StaleRead{GVR: gvr, Namespace: "ns", Name: name}, func() (metav1.Object, error) {
				c.Do(write)
				until(landed)
				return cached(inf, name)
			})
		}
		check("deleted", func(tx *model.Tx) { tx.Delete("configmaps", "ns", "deleted") },
			func() bool { _, err := cached(inf, "deleted"); return err != nil })
		check("created", func(tx *model.Tx) { tx.Create("configmaps", "ns", "created", nil) },
			func() bool { _, err := cached(inf, "created"); return err == nil })
		var uid string
		check("recreated", func(tx *model.Tx) {
			tx.Delete("configmaps", "ns", "recreated")
			uid = tx.Create("configmaps", "ns", "recreated", nil).Obj.UID
		}, func() bool { o, err := cached(inf, "recreated"); return err == nil && string(o.GetUID()) == uid })
	})
	for _, reason := range catalog.StaleReasons() {
		if v, _ := Value(last.Families, catalog.StaleReads.Name, catalog.LabelResource, "configmaps", catalog.LabelReason, reason); v != 0 {
			t.Errorf("row 9: %.0f stale reads counted as %s; the cache was newer than the live read every time", v, reason)
		}
	}
}

// Row 10: the delay from a version's delivery to a reconcile's read of it,
// for a read 30s after the delivery while the resource takes 1,000 events/s.
func TestLieReadDelayUnderLoad(t *testing.T) {
	h := History{Seed: 110, Duration: 5 * time.Minute,
		Loads: []Load{{Resource: "configmaps", Start: 3 * time.Minute, End: 3*time.Minute + 40*time.Second, Rate: 1000, Keys: 1}}}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	last := staleReadWorld(t, h, func(ctx context.Context, w *World, sr *probe.StaleReads, inf cache.SharedIndexInformer) {
		var wr *model.Write
		w.Cluster.Do(func(tx *model.Tx) { wr = tx.Create("configmaps", "ns", "target", nil) })
		rv := wr.RVString(w.Cluster.Resource("configmaps"))
		until(func() bool { o, err := cached(inf, "target"); return err == nil && o.GetResourceVersion() == rv })
		read := func() (metav1.Object, error) { return cached(inf, "target") }
		time.Sleep(100 * time.Millisecond)
		_ = sr.Check(ctx, probe.StaleRead{GVR: gvr, Namespace: "ns", Name: "target", Trigger: true}, read)
		time.Sleep(30 * time.Second)
		_ = sr.Check(ctx, probe.StaleRead{GVR: gvr, Namespace: "ns", Name: "target", Trigger: true}, read)
	})
	n, _ := Value(last.Families, catalog.ReconcileReadDelay.Name, catalog.LabelResource, "configmaps")
	if n != 2 {
		t.Errorf("row 10: %.0f reconcile read delays observed; want 2 (0.1s and 30.1s after the delivery)", n)
	}
}
