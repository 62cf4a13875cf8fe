package main

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// exposition is a real exporter's exposition, cut down: a canary resource
// and a plain one.
const exposition = `# TYPE rvsync_canary_delivery_latency_seconds histogram
rvsync_canary_delivery_latency_seconds_bucket{resource="configmaps",le="0.1"} 50
rvsync_canary_delivery_latency_seconds_bucket{resource="configmaps",le="1"} 60
rvsync_canary_delivery_latency_seconds_bucket{resource="configmaps",le="+Inf"} 60
rvsync_canary_delivery_latency_seconds_sum{resource="configmaps"} 3
rvsync_canary_delivery_latency_seconds_count{resource="configmaps"} 60
# TYPE rvsync_list_duration_seconds histogram
rvsync_list_duration_seconds_bucket{resource="secrets",kind="probe",result="success",le="0.1"} 90
rvsync_list_duration_seconds_bucket{resource="secrets",kind="probe",result="success",le="1.5"} 100
rvsync_list_duration_seconds_bucket{resource="secrets",kind="probe",result="success",le="+Inf"} 120
rvsync_list_duration_seconds_sum{resource="secrets",kind="probe",result="success"} 40
rvsync_list_duration_seconds_count{resource="secrets",kind="probe",result="success"} 120
# TYPE rvsync_relists_total counter
rvsync_relists_total{resource="secrets",reason="initial"} 60
rvsync_relists_total{resource="configmaps",reason="initial"} 1
# TYPE rvsync_resource_version_lag gauge
rvsync_resource_version_lag{resource="secrets"} 0
rvsync_resource_version_lag{resource="configmaps"} 0
# TYPE rvsync_build_info gauge
rvsync_build_info{version="x",revision="y",goversion="z"} 1
`

func parseExposition(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

func testProfile(t *testing.T) profile {
	t.Helper()
	m, err := parseExposition([]byte(exposition))
	if err != nil {
		t.Fatal(err)
	}
	return profileOf(scrape.Metrics(m), time.Minute)
}

func TestProfileGroupsTheExpositionByResource(t *testing.T) {
	p := testProfile(t)
	if len(p.resources) != 2 || p.resources[0].resource != "configmaps" || p.resources[1].resource != "secrets" {
		t.Fatalf("resources %+v, want configmaps and secrets", p.resources)
	}
	// configmaps: 3 buckets + sum + count, a counter, a gauge; secrets: the same
	if got := [2]int{p.resources[0].series(), p.resources[1].series()}; got != [2]int{7, 7} {
		t.Errorf("series per resource %v, want [7 7]", got)
	}
	if len(p.plain) != 1 || p.plain[0].resource != "secrets" {
		t.Errorf("plain %+v, want secrets alone (configmaps has the canary)", p.plain)
	}
	if p.other != 1 {
		t.Errorf("series without a resource %d, want 1", p.other)
	}
	for _, m := range p.resources[1].metrics {
		switch m.name {
		case catalog.Relists.Name:
			if m.rate != 1 {
				t.Errorf("relists rate %v, want 60 in a minute = 1/s", m.rate)
			}
		case catalog.ListDuration.Name:
			if m.rate != 2 || math.Abs(m.probs[0]-0.75) > 1e-9 || math.Abs(m.probs[2]-1.0/6) > 1e-9 {
				t.Errorf("list duration rate %v probs %v, want 2/s and [0.75 0.083 0.167]", m.rate, m.probs)
			}
		}
	}
}

// TestFleetHistoryContinuesIntoTheLiveScrape backfills a day of a small
// fleet, opens the blocks as Prometheus would and checks the stored series
// and values against the profile's rates and a drawn stall, and that the
// live exposition continues exactly the stored series.
func TestFleetHistoryContinuesIntoTheLiveScrape(t *testing.T) {
	p := testProfile(t)
	end := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	start := end.Add(-24 * time.Hour)
	f := newFleet(p, 3, job, "127.0.0.1:1", start, end, 7)
	stall := incident{resource: "bench002.secrets", start: start.Add(2 * time.Hour), end: start.Add(3 * time.Hour), stall: true}
	clear(f.incidents)
	f.addIncident(stall)
	dir := t.TempDir()
	n, err := f.backfill(context.Background(), dir, end, 30*time.Second, func(int, int64) {})
	if err != nil {
		t.Fatal(err)
	}
	// 3 resources of 7 series (the third a copy of secrets), 2,880 steps
	if want := int64(3 * 7 * 2880); n != want {
		t.Errorf("samples %d, want %d", n, want)
	}
	if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil { // as Prometheus' data directory has
		t.Fatal(err)
	}
	db, err := tsdb.OpenDBReadOnly(dir, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(start.UnixMilli(), end.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	at := func(name, resource string, ts time.Time, extra ...string) float64 {
		t.Helper()
		ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, name), labels.MustNewMatcher(labels.MatchEqual, catalog.LabelResource, resource)}
		for i := 0; i < len(extra); i += 2 {
			ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, extra[i], extra[i+1]))
		}
		ss := q.Select(context.Background(), false, nil, ms...)
		if !ss.Next() {
			t.Fatalf("no series %s{resource=%q}", name, resource)
		}
		it := ss.At().Iterator(nil)
		v := math.NaN()
		for it.Next() != 0 {
			tt, vv := it.At()
			if tt > ts.UnixMilli() {
				break
			}
			v = vv
		}
		return v
	}
	// counters rise at the profile's rate: 1 relist/s for secrets' copies
	if got := at(catalog.Relists.Name+"", "bench002.secrets", start.Add(time.Hour), "reason", "initial"); math.Abs(got-3600) > 1 {
		t.Errorf("relists after an hour %v, want 3600", got)
	}
	// the stall: lag grows at the RV rate, the other resource stays at 0
	if got := at(catalog.ResourceVersionLag.Name, "bench002.secrets", stall.start.Add(10*time.Minute)); got != 600*revisionsPerSecond {
		t.Errorf("lag 10 minutes into the stall %v, want %d", got, 600*revisionsPerSecond)
	}
	if got := at(catalog.ResourceVersionLag.Name, "secrets", stall.start.Add(10*time.Minute)); got != 0 {
		t.Errorf("lag of a healthy resource %v, want 0", got)
	}
	if got := at(catalog.ResourceVersionLag.Name, "bench002.secrets", stall.end.Add(time.Minute)); got != 0 {
		t.Errorf("lag after the stall %v, want 0", got)
	}
	// the histogram's buckets are cumulative and count the profile's rate
	if got := at(catalog.ListDuration.Name+"_count", "secrets", start.Add(time.Hour), "kind", "probe"); math.Abs(got-7200) > 1 {
		t.Errorf("list count after an hour %v, want 7200 (2/s)", got)
	}
	if got := at(catalog.ListDuration.Name+"_bucket", "secrets", start.Add(time.Hour), "le", "0.1"); math.Abs(got-5400) > 1 {
		t.Errorf("le=0.1 after an hour %v, want 5400 (75 %%)", got)
	}

	// the live scrape: the same series, values going on from the history's
	live, err := parseExposition(f.exposition(end.Add(time.Hour)))
	if err != nil {
		t.Fatalf("the live exposition does not parse: %v", err)
	}
	got := 0
	for _, fam := range live {
		for _, m := range fam.GetMetric() {
			got++
			secrets := !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == "configmaps" })
			if fam.GetName() == catalog.Relists.Name && secrets && m.GetCounter().GetValue() < 86400 {
				t.Errorf("live relists %v: the counter did not go on from the history (want > 86400)", m.GetCounter().GetValue())
			}
		}
	}
	if want := 3 * 3; got != want { // a histogram is one metric
		t.Errorf("live metrics %d, want %d", got, want)
	}
}
