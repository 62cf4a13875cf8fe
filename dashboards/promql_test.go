package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// query is one PromQL expression found in a dashboard.
type query struct {
	where    string // dashboard / panel or variable
	expr     string
	variable bool
}

var labelValues = regexp.MustCompile(`^label_values\((.+), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// queries returns every panel target and every query-variable selector of d.
func queries(t *testing.T, name string, d map[string]any) []query {
	t.Helper()
	var out []query
	for _, p := range panels(d) {
		for _, tg := range targets(p) {
			expr, _ := tg["expr"].(string)
			out = append(out, query{where: fmt.Sprintf("%s / %s / %s", name, p["title"], tg["refId"]), expr: expr})
		}
	}
	for _, v := range path(d, "templating", "list").([]any) {
		v := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v["query"].(string))
		if m == nil {
			t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", name, v["name"], v["query"])
			continue
		}
		out = append(out, query{where: fmt.Sprintf("%s / variable %s", name, v["name"]), expr: m[1], variable: true})
	}
	return out
}

// grafanaInterval matches Grafana's interval variables ($__rate_interval,
// ${__interval}, …); dashboard variables only occur inside quoted label values.
var grafanaInterval = regexp.MustCompile(`\$\{?__[a-z_]+\}?`)

// parse substitutes Grafana's interval variables and parses expr.
func parse(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(grafanaInterval.ReplaceAllString(expr, "5m"))
}

// selectors returns the vector selectors of expr.
func selectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// knownSeries reports whether a series name is a catalog series, a
// recording rule of the default spec or ALERTS.
func knownSeries(name string) bool {
	_, ok := catalog.Lookup(name)
	return ok || slices.Contains(slo.DefaultSpec().RecordingRules(), name) || name == alertsSeries
}

// checkExpr parses expr and fails on any series the catalog does not define.
func checkExpr(expr string) error {
	e, err := parse(expr)
	if err != nil {
		return err
	}
	for _, vs := range selectors(e) {
		if vs.Name == "" {
			return fmt.Errorf("selector %s has no metric name", vs)
		}
		if !knownSeries(vs.Name) {
			return fmt.Errorf("series %q is neither a catalog series, an SLO recording rule nor ALERTS", vs.Name)
		}
	}
	return nil
}

func TestCheckExpr(t *testing.T) {
	for _, c := range []struct {
		expr string
		ok   bool
	}{
		{`sum by (resource) (rate(rvsync_relists_total{resource=~"$resource"}[$__rate_interval]))`, true},
		{`histogram_quantile(0.99, sum by (le) (rate(rvsync_canary_delivery_latency_seconds_bucket[${__rate_interval}])))`, true},
		{`rvsync_slo:sli_error:ratio_rate5m{slo="rv-lag"} / on (resource) (1 - rvsync_slo:objective:ratio)`, true},
		{`ALERTS{slo!=""}`, true},
		{`rvsync_bogus_total{resource=~"$resource"}`, false},                            // not in the catalog
		{`rate(rvsync_list_duration_seconds[$__rate_interval])`, true},                  // a histogram stored as a native one (NHCB)
		{`rate(rvsync_objects_count[$__rate_interval])`, false},                         // a gauge has no count
		{`rvsync_resource_version_lag_bucket`, false},                                   // a gauge has no buckets
		{`rvsync_slo:sli_error:ratio_rate4h`, false},                                    // no such recording rule
		{`up{job="rvsync"}`, false},                                                     // not ours
		{`{resource="pods"}`, false},                                                    // no metric name
		{`sum(rate(rvsync_relists_total[$__rate_interval])`, false},                     // syntax
		{`rvsync_objects{resource=~"$resource"} + on() group_left bogus_metric`, false}, // bogus on the right
	} {
		err := checkExpr(c.expr)
		if (err == nil) != c.ok {
			t.Errorf("checkExpr(%q) = %v, want ok=%v", c.expr, err, c.ok)
		}
	}
}

func TestEveryQueryParsesAndUsesKnownSeries(t *testing.T) {
	for _, c := range configs {
		n := 0
		for name, d := range decodeAll(t, c.cfg) {
			for _, q := range queries(t, name, d) {
				n++
				if err := checkExpr(q.expr); err != nil {
					t.Errorf("%s: %s: %q: %v", c.name, q.where, q.expr, err)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no queries found", c.name)
		}
	}
}

func TestEveryCatalogFamilyIsShown(t *testing.T) {
	shown := map[string]bool{}
	for name, d := range decodeAll(t, Config{}) {
		for _, q := range queries(t, name, d) {
			e, err := parse(q.expr)
			if err != nil {
				continue // reported by TestEveryQueryParsesAndUsesKnownSeries
			}
			for _, vs := range selectors(e) {
				if m, ok := catalog.Lookup(vs.Name); ok && !q.variable {
					shown[m.Name] = true
				}
			}
		}
	}
	for _, m := range catalog.All() {
		if !shown[m.Name] {
			t.Errorf("family %s is on no dashboard panel", m.Name)
		}
	}
}

// TestTimeSliceSignalsAreJudgedLikeTheirSLI: the Overview shows a
// time-slice SLO's signal as its bad-slice rule reads it, the signal less
// its allowance, so that a quiet resource's healthy staleness sawtooth (up
// to its freshness proof period) does not show as a breach, and the
// threshold colours mean what the alert means.
func TestTimeSliceSignalsAreJudgedLikeTheirSLI(t *testing.T) {
	c := Config{}.withDefaults()
	d := decodeAll(t, c)[FileName(uidOverview)]
	for _, o := range c.Spec.SLOs {
		sli, _ := slo.SLIOf(o.Name)
		if sli.Kind != slo.TimeSlice {
			continue
		}
		want := []string{sli.Signal.Name}
		if sli.Allowance != nil {
			want = append(want, sli.Allowance.Name)
		}
		title := signal(o).title(c, o) + ", worst"
		ts := targets(panelTitled(t, d, title))
		if len(ts) != 1 {
			t.Fatalf("%s: %d queries, want 1", title, len(ts))
		}
		e, err := parse(ts[0]["expr"].(string))
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		var got []string
		for _, vs := range selectors(e) {
			got = append(got, vs.Name)
		}
		subtracts := false
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if b, ok := n.(*parser.BinaryExpr); ok && b.Op == parser.SUB {
				subtracts = true
			}
			return nil
		})
		if !slices.Equal(got, want) || subtracts != (sli.Allowance != nil) {
			t.Errorf("%s: %s reads %v (subtracts: %v), want %v less the allowance when there is one", o.Name, ts[0]["expr"], got, subtracts, want)
		}
	}
}

// hasMatcher reports whether vs carries the matcher written as want.
func hasMatcher(vs *parser.VectorSelector, want string) bool {
	return slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.String() == want })
}

func TestSelectorReachesEveryQuery(t *testing.T) {
	cfg := configs[1].cfg.withDefaults()
	cluster := promql.Re(cfg.Spec.ClusterLabel, "$"+varCluster)
	resource := promql.Re(catalog.LabelResource, "$"+varResource)
	for name, d := range decodeAll(t, configs[1].cfg) {
		for _, q := range queries(t, name, d) {
			e, err := parse(q.expr)
			if err != nil {
				t.Fatalf("%s: %v", q.where, err)
			}
			for _, vs := range selectors(e) {
				var want []string
				if m, ok := catalog.Lookup(vs.Name); ok {
					want = append(want, customSelector)
					if !q.variable {
						want = append(want, cluster)
						if slices.Contains(m.Labels, catalog.LabelResource) {
							want = append(want, resource)
						}
					}
				} else {
					// Recording rules and ALERTS aggregate the exporter's
					// job labels away; they keep cluster and resource.
					want = append(want, cluster, resource)
				}
				for _, w := range want {
					if !hasMatcher(vs, w) {
						t.Errorf("%s: %s lacks %s", q.where, vs, w)
					}
				}
			}
		}
	}
}
