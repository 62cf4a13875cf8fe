package probe

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Snapshots in, exposition text out: known values appear under the
// catalog's names, unknown ones are left out rather than reported as 0.
func TestGaugesFromSnapshots(t *testing.T) {
	src := func() []snapshot {
		return []snapshot{
			{
				Resource: "configmaps", HeadKnown: true, HeadRV: 1200, InformerKnown: true, InformerRV: 1150,
				LagKnown: true, Lag: 50, StalenessKnown: true, StalenessSeconds: 2.5, Synced: true, Objects: 42,
				CanaryLastDelivered: 1.7e9,
			},
			{
				Resource: "deployments.apps", Synced: false, Objects: 0,
				Convergence: &convergenceSnapshot{Unconverged: 3, OldestSeconds: 12},
			},
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := newMetrics().register(reg, src); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP rvsync_cache_staleness_seconds ` + catalog.CacheStaleness.Help + `
# TYPE rvsync_cache_staleness_seconds gauge
rvsync_cache_staleness_seconds{resource="configmaps"} 2.5
# HELP rvsync_canary_last_delivered_timestamp_seconds ` + catalog.CanaryLastDelivered.Help + `
# TYPE rvsync_canary_last_delivered_timestamp_seconds gauge
rvsync_canary_last_delivered_timestamp_seconds{resource="configmaps"} 1.7e+09
# HELP rvsync_head_resource_version ` + catalog.HeadResourceVersion.Help + `
# TYPE rvsync_head_resource_version gauge
rvsync_head_resource_version{resource="configmaps"} 1200
# HELP rvsync_informer_resource_version ` + catalog.InformerResourceVersion.Help + `
# TYPE rvsync_informer_resource_version gauge
rvsync_informer_resource_version{resource="configmaps"} 1150
# HELP rvsync_informer_synced ` + catalog.InformerSynced.Help + `
# TYPE rvsync_informer_synced gauge
rvsync_informer_synced{resource="configmaps"} 1
rvsync_informer_synced{resource="deployments.apps"} 0
# HELP rvsync_objects ` + catalog.Objects.Help + `
# TYPE rvsync_objects gauge
rvsync_objects{resource="configmaps"} 42
rvsync_objects{resource="deployments.apps"} 0
# HELP rvsync_oldest_unconverged_seconds ` + catalog.OldestUnconverged.Help + `
# TYPE rvsync_oldest_unconverged_seconds gauge
rvsync_oldest_unconverged_seconds{resource="deployments.apps"} 12
# HELP rvsync_resource_version_lag ` + catalog.ResourceVersionLag.Help + `
# TYPE rvsync_resource_version_lag gauge
rvsync_resource_version_lag{resource="configmaps"} 50
# HELP rvsync_unconverged_objects ` + catalog.UnconvergedObjects.Help + `
# TYPE rvsync_unconverged_objects gauge
rvsync_unconverged_objects{resource="deployments.apps"} 3
`
	gauges := []string{
		catalog.CacheStaleness.Name, catalog.CanaryLastDelivered.Name, catalog.HeadResourceVersion.Name,
		catalog.InformerResourceVersion.Name, catalog.InformerSynced.Name, catalog.Objects.Name,
		catalog.OldestUnconverged.Name, catalog.ResourceVersionLag.Name, catalog.UnconvergedObjects.Name,
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), gauges...); err != nil {
		t.Error(err)
	}
	// client_golang's lint (promlint): names, units, help and types
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// Every family the catalog declares is registered by the collectors, with
// the catalog's type, so nothing can be declared and never exported; only
// rvsync_build_info is the exporter binary's own.
func TestEveryCatalogFamilyIsExported(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := newMetrics()
	if err := m.register(reg, func() []snapshot {
		return []snapshot{{Resource: "pods", Space: "cluster", State: catalog.StateOK, HeadKnown: true, InformerKnown: true, LagKnown: true, StalenessKnown: true,
			ProofPeriodKnown: true, SilenceKnown: true, HeadAgeKnown: true, Convergence: &convergenceSnapshot{}, CanaryLastDelivered: 1}}
	}); err != nil {
		t.Fatal(err)
	}
	// touch every vector once so it has a series
	for _, h := range []*prometheus.HistogramVec{m.EventDeliveryLag, m.CanaryDeliveryLatency, m.GenerationConvergence, m.StaleReadBehind, m.ReconcileReadDelay, m.StoreLag} {
		h.WithLabelValues("pods").Observe(1)
	}
	m.ListDuration.WithLabelValues("pods", catalog.KindList, catalog.ResultSuccess).Observe(1)
	for _, c := range []*prometheus.CounterVec{m.WatchStarts, m.Regressions, m.TimelineDropped, m.CanaryLost, m.DeliveryUnbounded} {
		c.WithLabelValues("pods").Inc()
	}
	for _, c := range []*prometheus.CounterVec{m.Relists, m.ListErrors, m.WatchErrors, m.HeadProbeErrors, m.CanaryWrites, m.StaleReadChecks, m.StaleReads} {
		c.WithLabelValues("pods", "x").Inc()
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, f := range fams {
		types[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	for _, c := range catalog.All() {
		if c.Name == catalog.BuildInfo.Name {
			continue
		}
		if got, ok := types[c.Name]; !ok || got != string(c.Type) {
			t.Errorf("%s: exported as %q (present %v); catalog says %s", c.Name, got, ok, c.Type)
		}
	}
}

// The gauges' label pairs are kept from one scrape to the next: through a
// registry that adds a label to every series (as Monitor.Register does for
// a controller), scrape after scrape shows each resource's current space,
// state and values, resources that left are gone, and label values
// client_golang rejects fail the scrape instead of panicking.
func TestGaugeLabelsAcrossScrapes(t *testing.T) {
	var snaps []snapshot
	reg := prometheus.NewPedanticRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{catalog.LabelController: "c1"}, reg)
	if err := newMetrics().register(wrapped, func() []snapshot { return snaps }); err != nil {
		t.Fatal(err)
	}
	families := []string{catalog.ResourceInfo.Name, catalog.Objects.Name, catalog.ResourceState.Name}
	// series of resource r in space sp with state st and n objects
	series := func(r, sp, st string, n int) (info, objects, state string) {
		info = `rvsync_resource_info{controller="c1",resource="` + r + `",space="` + sp + `"} 1` + "\n"
		objects = `rvsync_objects{controller="c1",resource="` + r + `"} ` + strconv.Itoa(n) + "\n"
		for _, s := range catalog.States() {
			v := "0"
			if s == st {
				v = "1"
			}
			state += `rvsync_resource_state{controller="c1",resource="` + r + `",state="` + s + `"} ` + v + "\n"
		}
		return info, objects, state
	}
	type res struct {
		name, space, state string
		objects            int
	}
	for i, scrape := range [][]res{
		{{"configmaps", "core", catalog.StateOK, 3}, {"widgets.example.com", "aggregated", catalog.StateHeadUnknown, 0}},
		{{"configmaps", "core", catalog.StateAheadOfHead, 4}, {"widgets.example.com", "core", catalog.StateOK, 7}}, // space moved
		{{"pods", "core", catalog.StateOK, 9}},                                                   // both others gone
		{{"configmaps", "core", catalog.StateOK, 5}, {"pods", "core", catalog.StateOpaqueRV, 9}}, // one back
	} {
		snaps = nil
		var info, objects, state string
		for _, r := range scrape {
			snaps = append(snaps, snapshot{Resource: r.name, Space: r.space, State: r.state, Objects: r.objects})
		}
		slices.SortFunc(scrape, func(a, b res) int { return strings.Compare(a.name, b.name) })
		for _, r := range scrape {
			in, ob, st := series(r.name, r.space, r.state, r.objects)
			info, objects, state = info+in, objects+ob, state+st
		}
		want := "# HELP rvsync_objects " + catalog.Objects.Help + "\n# TYPE rvsync_objects gauge\n" + objects +
			"# HELP rvsync_resource_info " + catalog.ResourceInfo.Help + "\n# TYPE rvsync_resource_info gauge\n" + info +
			"# HELP rvsync_resource_state " + catalog.ResourceState.Help + "\n# TYPE rvsync_resource_state gauge\n" + state
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), families...); err != nil {
			t.Errorf("scrape %d: %v", i+1, err)
		}
	}
	snaps = []snapshot{{Resource: "bad\xff", Space: "core", State: catalog.StateOK}}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("a resource name that is not UTF-8: Gather error %v, want one about UTF-8", err)
	}
}

// #39, premise 3 (page corpus seed 380801): an extension API server's
// resource with three informers, the freshness reads off; one of them,
// scoped to an empty namespace, hears no bookmark (its server sends none
// until its cache moves), so its cadence is its session's length, 597 s;
// the exporter's own watch stopped delivering after a restore. The
// resource reported the longest silence (820 s, the stalled watch's) and
// the longest cadence (597 s, the quiet one's), and RvsyncWatchStalled,
// which compares the two, did not page in 13 minutes. The silence and the
// bookmark period are one informer's: the one most overdue against its
// own cadence.
func TestSilenceAndPeriodAreOneInformersTheMostOverdue(t *testing.T) {
	quiet := informerValues{synced: true, silenceKnown: true, silence: 300 * time.Second, cadence: 597 * time.Second}
	stalled := informerValues{synced: true, silenceKnown: true, silence: 820 * time.Second, cadence: 61 * time.Second}
	healthy := informerValues{synced: true, silenceKnown: true, silence: 30 * time.Second, cadence: 60 * time.Second}
	unknown := informerValues{synced: false, cadence: 900 * time.Second}
	stalledIn := func(s snapshot) bool {
		return s.SilenceKnown && s.SilenceSeconds > max(3*s.BookmarkPeriodSeconds, 180)
	}
	for _, order := range [][]informerValues{
		{quiet, stalled, healthy, unknown},
		{unknown, stalled, quiet, healthy},
		{healthy, unknown, quiet, stalled},
	} {
		s := snapshot{Synced: true}
		for _, v := range order {
			s.worst(v)
		}
		if !stalledIn(s) {
			t.Errorf("silence %vs against a bookmark period of %vs: want the stalled informer's (820 s against 61 s), which RvsyncWatchStalled pages", s.SilenceSeconds, s.BookmarkPeriodSeconds)
		}
	}
	// none overdue: no stall, whichever informer the pair is
	for _, order := range [][]informerValues{{quiet, healthy, unknown}, {unknown, healthy, quiet}} {
		s := snapshot{Synced: true}
		for _, v := range order {
			s.worst(v)
		}
		if stalledIn(s) || !s.SilenceKnown {
			t.Errorf("silence %vs (known %v) against %vs: want known and within three periods", s.SilenceSeconds, s.SilenceKnown, s.BookmarkPeriodSeconds)
		}
	}
}
