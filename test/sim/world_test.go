package sim

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// An operator's informer started late and stopped early is in the truth
// only while it runs and has listed, and the monitor reports the resource
// throughout (its informer_synced says whether every informer synced).
func TestAnInformerStartedLateAndStoppedEarlyIsTruthOnlyWhileItRuns(t *testing.T) {
	r := Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-late", Embedded: true, StartAfter: 2 * time.Minute, StopAfter: 5 * time.Minute}}}
	counts := map[time.Duration]int{}
	var start time.Time
	err := Run(t, Setup{Resources: []Watched{r}}, 1, 7*time.Minute, func(w *World) { start = w.Start }, func(s Scrape) {
		counts[s.At.Sub(start).Truncate(time.Second)] = len(s.Truth[r.Name()].Informers)
	})
	if err != nil {
		t.Fatal(err)
	}
	for at, n := range counts {
		want := 1
		if at > 2*time.Minute+5*time.Second && at < 5*time.Minute {
			want = 2 // listed within a few seconds of its start
		}
		if (at < 2*time.Minute || at > 5*time.Minute || want == 2) && n != want {
			t.Errorf("at %v: %d informers in the truth, want %d", at, n, want)
		}
	}
	if len(counts) < 25 {
		t.Errorf("%d scrapes in 7 minutes, want 28", len(counts))
	}
}

// An operator's informer stopped and built again on its connection leaves
// the truth while stopped and joins it again only once the new informer
// listed: until then the connection holds its predecessor's list, which
// the new informer's empty store does not reflect.
func TestARestartedInformerIsTruthAgainOnceItListed(t *testing.T) {
	r := Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-restarted", Embedded: true, StopAfter: 2 * time.Minute, RestartAfter: 4 * time.Minute}}}
	type seen struct{ informers, missing int }
	at := map[time.Duration]seen{}
	var start time.Time
	// lists that take up to a minute: scrapes fall while the new one lists
	script := func(w *World) {
		start = w.Start
		w.Cluster.At(start.Add(30*time.Second), func(tx *model.Tx) {
			for i := range 20 {
				tx.Create(r.Name(), LoadNamespace, fmt.Sprintf("obj-%d", i), nil)
			}
		})
	}
	err := Run(t, Setup{Resources: []Watched{r}, ListLatency: time.Minute}, 1, 7*time.Minute, script, func(s Scrape) {
		var n seen
		for _, it := range s.Truth[r.Name()].Informers {
			n.informers++
			n.missing += it.Missing
		}
		at[s.At.Sub(start).Truncate(time.Second)] = n
	})
	if err != nil {
		t.Fatal(err)
	}
	restarted := 0
	for d, n := range at {
		want := 2
		if d >= 2*time.Minute && d < 4*time.Minute {
			want = 1
		}
		if (d > 65*time.Second && d < 2*time.Minute) || (d >= 2*time.Minute && d < 4*time.Minute) || d > 5*time.Minute+5*time.Second {
			if n.informers != want {
				t.Errorf("at %v: %d informers in the truth, want %d", d, n.informers, want)
			}
		}
		if d > 4*time.Minute && n.informers == 2 {
			restarted++
		}
		if d >= 2*time.Minute && n.missing > 0 {
			t.Errorf("at %v: the truth says its informers lack %d changes, written minutes before (a store counted before it listed)", d, n.missing)
		}
	}
	if restarted == 0 {
		t.Error("the restarted informer never joined the truth")
	}
}

// writtenWorld runs r for two minutes with ten objects created 20-29 s
// in, then more (nil: none), and checks that every informer of r is in
// the truth at the end and misses nothing; it returns the world.
func writtenWorld(t *testing.T, r Watched, more func(w *World)) *World {
	t.Helper()
	var w *World
	var last Scrape
	script := func(world *World) {
		w = world
		for i := range 10 {
			w.Cluster.At(w.Start.Add(time.Duration(20+i)*time.Second), func(tx *model.Tx) {
				tx.Create(r.Name(), LoadNamespace, fmt.Sprintf("obj-%d", i), nil)
			})
		}
		if more != nil {
			more(w)
		}
	}
	if err := Run(t, Setup{Resources: []Watched{r}}, 1, 2*time.Minute, script, func(s Scrape) { last = s }); err != nil {
		t.Fatal(err)
	}
	if n := len(last.Truth[r.Name()].Informers); n != len(r.Informers) {
		t.Fatalf("%d informers in the truth, want %d", n, len(r.Informers))
	}
	for i, it := range last.Truth[r.Name()].Informers {
		if it.Missing != 0 {
			t.Errorf("informer %d (%s) lacks %d changes a minute after the last write", i, it.Host, it.Missing)
		}
	}
	return w
}

// An operator's typed informer (whole objects) beside its metadata
// informer of the same resource: both list and follow the writes, each
// its own watch, and both are in the truth, read from their stores.
func TestATypedAndAMetadataInformerOfOneResourceBothHoldIt(t *testing.T) {
	r := Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-typed", Embedded: true, Typed: true}, {Host: "ctrl-meta", Embedded: true}}}
	w := writtenWorld(t, r, nil)
	typed := w.Informers[r.Name()][1].GetStore().List()
	if len(typed) != 10 {
		t.Fatalf("the typed informer holds %d objects, want 10", len(typed))
	}
	if _, ok := typed[0].(*unstructured.Unstructured); !ok {
		t.Errorf("the typed informer holds %T, want whole objects", typed[0])
	}
}

// An operator's informer of one object by name (a field selector) lists
// and watches that object only, and its truth is that object's: writes of
// the others are nothing it misses.
func TestAFieldSelectedInformerHoldsItsObjectOnly(t *testing.T) {
	r := Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-field", Embedded: true, Field: "metadata.name=obj-3"}}}
	w := writtenWorld(t, r, func(w *World) {
		w.Cluster.At(w.Start.Add(40*time.Second), func(tx *model.Tx) {
			tx.Update(r.Name(), LoadNamespace, "obj-3", func(o *model.Object) { o.Generation++ })
			tx.Update(r.Name(), LoadNamespace, "obj-4", func(o *model.Object) { o.Generation++ })
		})
	})
	held := storeView(w.Informers[r.Name()][1])
	if len(held) != 1 || held[LoadNamespace+"/obj-3"] == "" {
		t.Errorf("the field-selected informer holds %v, want obj-3 only", held)
	}
}

// Canaries of several resources, as the exporter's canary.resources lists
// them, each write their own resource's object and each is delivered by
// that resource's informer: a custom resource's and events' on an etcd of
// its own beside configmaps' (-sim.widen=canaries draws them).
func TestCanariesOfSeveralResourcesEachWriteAndDeliverTheirOwn(t *testing.T) {
	setup := Setup{
		Etcds:        []model.EtcdSpec{{Name: model.MainEtcd, Revision: 1000}, {Name: "events", Revision: 10}},
		Resources:    []Watched{resConfigMaps, resWidgets, resEvents},
		Canary:       resConfigMaps.Name(),
		MoreCanaries: []string{resWidgets.Name(), resEvents.Name()},
	}
	var start time.Time
	var last Scrape
	err := Run(t, setup, 1, 4*time.Minute, func(w *World) { start = w.Start }, func(s Scrape) { last = s })
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range setup.canaries() {
		writes, _ := Value(last.Families, catalog.CanaryWrites.Name, catalog.LabelResource, res, catalog.LabelResult, catalog.ResultSuccess)
		lost, _ := Value(last.Families, catalog.CanaryLost.Name, catalog.LabelResource, res)
		delivered, ok := Value(last.Families, catalog.CanaryLastDelivered.Name, catalog.LabelResource, res)
		// a write every 10 s for 4 minutes
		if writes < 20 {
			t.Errorf("%s: %v canary writes succeeded in 4 min, want about 24", res, writes)
		}
		if lost != 0 {
			t.Errorf("%s: %v canary writes lost in a world without faults", res, lost)
		}
		if at := time.Unix(0, int64(delivered*1e9)); !ok || at.Before(start.Add(3*time.Minute)) {
			t.Errorf("%s: latest canary delivery at %v (known %v), want within the last minute of %v", res, at.Sub(start), ok, last.At.Sub(start))
		}
	}
}
