//go:build integration

package e2e

import (
	"fmt"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// TestNativeHistogramsWithCustomBuckets: a Prometheus that converts the
// exporter's classic histograms into native ones with custom buckets
// (convert_classic_histograms_to_nhcb, what the chart's ServiceMonitor
// asks for) stores one series per histogram instead of one per bucket, and
// the shipped rules and dashboards read it to the same values as the
// classic series. One real Prometheus scrapes one exposition twice: as
// classic (cluster "classic") and converted (cluster "nhcb"). The known
// truth: 80 Lists of 0.1 s and 20 of 3 s, so an error ratio of exactly 0.2
// against the 1.5 s threshold.
func TestNativeHistogramsWithCustomBuckets(t *testing.T) {
	t.Parallel()
	bin, err := testenv.Binary("RVSYNC_PROMETHEUS", "prometheus-*/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := catalog.ListDuration
	lists := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
	reg.MustRegister(lists)
	h := lists.WithLabelValues("pods", catalog.KindProbe, catalog.ResultSuccess) // exposed at 0 observations
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	target := srv.Listener.Addr().String()

	rules, err := alerts.Render(slo.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	job := func(name string, nhcb bool) any {
		return map[string]any{
			"job_name":                           name,
			"convert_classic_histograms_to_nhcb": nhcb,
			"static_configs":                     []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"cluster": name}}},
		}
	}
	p := startPrometheusWith(t, t.TempDir(), prometheusOptions{
		rules: rules, interval: time.Second, binary: bin, name: "prometheus-nhcb",
		scrapeConfigs: []any{job("classic", false), job("nhcb", true)},
	})
	// both jobs hold the zero sample before the observations
	p.waitQuery(t, 2*time.Minute, fmt.Sprintf(`count(count_over_time(%s_count{cluster="classic"}[5m]) >= 2) and count(count_over_time(%s{cluster="nhcb"}[5m]) >= 2)`, m.Name, m.Name))
	for i := range 100 {
		if i%5 == 0 {
			h.Observe(3)
		} else {
			h.Observe(0.1)
		}
	}
	p.waitQuery(t, 2*time.Minute, fmt.Sprintf(`%s_count{cluster="classic"} == 100 and on () histogram_count(%s{cluster="nhcb"}) == 100`, m.Name, m.Name))

	t.Run("one series per histogram", func(t *testing.T) {
		for cluster, want := range map[string]int{"classic": len(m.Buckets) + 3, "nhcb": 1} {
			v, err := p.query(fmt.Sprintf(`count({__name__=~"%s.*", cluster=%q})`, m.Name, cluster))
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != 1 || int(v[0].Value) != want {
				t.Errorf("%s: %v series of %s, want %d", cluster, v, m.Name, want)
			}
		}
	})
	ratio := slo.Rule(slo.ErrorRatioRule("5m"), slo.ListLatency)
	t.Run("the SLO's error ratio", func(t *testing.T) {
		p.waitQuery(t, 2*time.Minute, fmt.Sprintf(`count(%s) == 2`, ratio))
		got := map[string]float64{}
		res, err := p.query(ratio)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res {
			got[string(s.Metric["cluster"])] = float64(s.Value)
		}
		for _, cluster := range []string{"classic", "nhcb"} {
			if math.Abs(got[cluster]-0.2) > 1e-9 {
				t.Errorf("%s: %s = %v, want 0.2 (20 of 100 Lists above 1.5 s); all: %v", cluster, ratio, got[cluster], got)
			}
		}
	})
	t.Run("the dashboards' quantile", func(t *testing.T) {
		// the List-latency p95 panel's expression form: classic or native
		q := fmt.Sprintf(`histogram_quantile(0.95, sum by (cluster, le) (rate(%[1]s_bucket[5m]))) or histogram_quantile(0.95, sum by (cluster) (rate(%[1]s[5m])))`, m.Name)
		res, err := p.query(q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]model.SampleValue{}
		for _, s := range res {
			got[string(s.Metric["cluster"])] = s.Value
		}
		// 95th of 100: in the (2.5, 5] bucket holding the 20 slow ones
		if len(got) != 2 || math.Abs(float64(got["classic"]-got["nhcb"])) > 1e-9 || got["classic"] <= 2.5 || got["classic"] > 5 {
			t.Errorf("p95 by cluster %v, want equal, in (2.5, 5]", got)
		}
	})
	t.Run("the recorded quantile", func(t *testing.T) {
		// the overview's trend reads the SLO rules' p95 of the probes
		rec := slo.QuantileRule("5m")
		p.waitQuery(t, 2*time.Minute, fmt.Sprintf(`count(%s{kind=%q}) == 2`, rec, catalog.KindProbe))
		res, err := p.query(rec)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, s := range res {
			got[string(s.Metric["cluster"])] = float64(s.Value)
		}
		// the 95th of 100 is the 15th of the 20 in (2.5, 5]: 2.5 + 15/20 × 2.5
		for _, cluster := range []string{"classic", "nhcb"} {
			if math.Abs(got[cluster]-4.375) > 1e-9 {
				t.Errorf("%s: %s = %v, want 4.375; all: %v", cluster, rec, got[cluster], got)
			}
		}
	})
}
