package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// committedDashboards is the chart's dashboards, from this directory.
const committedDashboards = "../../charts/rvsync-slo/files/dashboards"

// panelsNow is the time the dashboards are opened at: not on a whole
// minute, so that aligning to the step shows.
var panelsNow = time.Date(2026, 3, 4, 5, 6, 47, 0, time.UTC)

// targetKey names one target of one panel.
type targetKey struct {
	dashboard string
	panel     int
	ref       string
}

// targetKinds are the queries a target asks for.
type targetKinds struct{ instant, rng bool }

// committedTargets reads the committed dashboards' panel targets (rows'
// panels included) without the loader, and their dashboards' time.from.
func committedTargets(t *testing.T) (map[targetKey]targetKinds, map[string]string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(committedDashboards, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", committedDashboards, err)
	}
	targets, from := map[targetKey]targetKinds{}, map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		uid := d["uid"].(string)
		from[uid] = d["time"].(map[string]any)["from"].(string)
		var walk func(ps []any)
		walk = func(ps []any) {
			for _, p := range ps {
				p := p.(map[string]any)
				if sub, ok := p["panels"].([]any); ok {
					walk(sub)
				}
				tgs, _ := p["targets"].([]any)
				for _, tg := range tgs {
					tg := tg.(map[string]any)
					instant := tg["instant"] == true
					// Neither flag: a range query, as in Grafana.
					targets[targetKey{uid, int(p["id"].(float64)), tg["refId"].(string)}] = targetKinds{instant, tg["range"] == true || !instant}
				}
			}
		}
		walk(d["panels"].([]any))
	}
	return targets, from
}

// Every target of every committed panel becomes a query with no variable
// left that Prometheus' own parser accepts, over the dashboard's default
// range aligned to its step, or at now for an instant target; unset
// variables take the dashboards' default selection.
func TestLoadPanelsCommittedDashboards(t *testing.T) {
	const scrape = 30 * time.Second
	qs, err := loadPanels(committedDashboards, panelsNow, scrape, nil)
	if err != nil {
		t.Fatal(err)
	}
	targets, from := committedTargets(t)
	seen := map[targetKey]bool{}
	p := parser.NewParser(parser.Options{})
	for _, q := range qs {
		k := targetKey{q.dashboard, q.panelID, q.refID}
		kinds, ok := targets[k]
		if !ok {
			t.Errorf("%s: no such target in the dashboards", q.where())
		}
		seen[k] = true
		if strings.Contains(q.expr, "$") {
			t.Errorf("%s: a variable is left: %s", q.where(), q.expr)
		}
		if _, err := p.ParseExpr(q.expr); err != nil {
			t.Errorf("%s: %v\n%s", q.where(), err, q.expr)
		}
		if (q.instant && !kinds.instant) || (!q.instant && !kinds.rng) {
			t.Errorf("%s: instant = %v, but the target asks for %+v", q.where(), q.instant, kinds)
		}
		if q.instant {
			if !q.end.Equal(panelsNow) || q.step != 0 {
				t.Errorf("%s: instant query at %v step %v, want at %v", q.where(), q.end, q.step, panelsNow)
			}
			continue
		}
		if from[q.dashboard] != "now-6h" {
			continue
		}
		start := panelsNow.Add(-6 * time.Hour)
		if q.step < scrape || q.start.Unix()%int64(q.step/time.Second) != 0 || q.end.Unix()%int64(q.step/time.Second) != 0 ||
			q.start.After(start) || !q.start.After(start.Add(-q.step)) || q.end.After(panelsNow) || !q.end.After(panelsNow.Add(-q.step)) {
			t.Errorf("%s: range %v to %v step %v: want the 6 h up to %v aligned to a step of at least %v", q.where(), q.start, q.end, q.step, panelsNow, scrape)
		}
	}
	for k := range targets {
		if !seen[k] {
			t.Errorf("target %v: no query", k)
		}
	}
	t.Logf("%d dashboards, %d targets, %d queries", len(from), len(targets), len(qs))

	// The default selections: All (.*) on the overview, configmaps on the
	// resource detail.
	for _, want := range []struct{ dashboard, matcher string }{
		{"rvsync-overview", `resource=~".*"`},
		{"rvsync-overview", `cluster=~".*"`},
		{"rvsync-resource", `resource=~"configmaps"`},
	} {
		found := false
		for _, q := range qs {
			found = found || (q.dashboard == want.dashboard && strings.Contains(q.expr, want.matcher))
		}
		if !found {
			t.Errorf("%s: no query selects %s", want.dashboard, want.matcher)
		}
	}
}

// A resource chosen in vars replaces the default selection, escaped as a
// regexp: the selector matches that resource and no other.
func TestLoadPanelsResourceFromVars(t *testing.T) {
	qs, err := loadPanels(committedDashboards, panelsNow, 30*time.Second, map[string]string{"resource": "deployments.apps"})
	if err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	matched := 0
	for _, q := range qs {
		e, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.where(), err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, m := range vs.LabelMatchers {
				if m.Name != "resource" {
					continue
				}
				matched++
				if !m.Matches("deployments.apps") || m.Matches("deploymentsXapps") || m.Matches("configmaps") {
					t.Errorf("%s: %s should match deployments.apps alone", q.where(), m)
				}
			}
			return nil
		})
	}
	if matched == 0 {
		t.Error("no resource matcher in any query")
	}
}

// The step and $__rate_interval of known panels of the committed
// dashboards (now-6h), by hand from Grafana's rule: a 12-column panel is
// 960 px, 6 h / 960 = 22.5 s, rounded to 20 s; a 4-column stat 320 px,
// 67.5 s → 1 m; the 16-column table 1280 px, 16.875 s → 15 s. The step is
// at least the scrape interval, and $__rate_interval is
// max(interval + scrape, 4 × scrape).
func TestLoadPanelsStepAndRateInterval(t *testing.T) {
	for _, tc := range []struct {
		scrape    time.Duration
		panel     string
		step      time.Duration // 0: instant
		rate      string
		start, to string // 15:04:05 of the aligned range, on the 3rd and the 4th
	}{
		{15 * time.Second, "Canary delivery latency p50 / p99", 20 * time.Second, "1m0s", "23:06:40", "05:06:40"},
		{30 * time.Second, "Canary delivery latency p50 / p99", 30 * time.Second, "2m0s", "23:06:30", "05:06:30"},
		{15 * time.Second, "List latency p95, worst", time.Minute, "1m15s", "23:06:00", "05:06:00"},
		{30 * time.Second, "List latency p95, worst", time.Minute, "2m0s", "23:06:00", "05:06:00"},
		{15 * time.Second, "Resources, worst first", 0, "1m0s", "05:06:47", "05:06:47"},
		{30 * time.Second, "Resources, worst first", 0, "2m0s", "05:06:47", "05:06:47"},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.panel, tc.scrape), func(t *testing.T) {
			qs, err := loadPanels(committedDashboards, panelsNow, tc.scrape, nil)
			if err != nil {
				t.Fatal(err)
			}
			var q *panelQuery
			for i := range qs {
				if qs[i].dashboard == "rvsync-overview" && qs[i].panel == tc.panel && qs[i].refID == "A" {
					q = &qs[i]
				}
			}
			if q == nil {
				t.Fatalf("no rvsync-overview panel %q", tc.panel)
			}
			if q.instant != (tc.step == 0) || q.step != tc.step {
				t.Errorf("instant %v step %v, want step %v (0: instant)", q.instant, q.step, tc.step)
			}
			if !strings.Contains(q.expr, "["+tc.rate+"]") {
				t.Errorf("want $__rate_interval %s in\n%s", tc.rate, q.expr)
			}
			if got := q.start.Format("15:04:05") + " " + q.end.Format("15:04:05"); got != tc.start+" "+tc.to {
				t.Errorf("range %v to %v, want %s to %s", q.start, q.end, tc.start, tc.to)
			}
			if q.end.Sub(q.start) != 6*time.Hour && !q.instant {
				t.Errorf("range %v, want 6h", q.end.Sub(q.start))
			}
		})
	}
}

// syntheticDashboard writes a dashboard of a 30-day default range with one
// collapsed row, and returns its directory.
func syntheticDashboard(t *testing.T, vars, panels string) string {
	t.Helper()
	dir := t.TempDir()
	d := `{"uid": "synthetic", "title": "Synthetic", "time": {"from": "now-30d", "to": "now"},
		"templating": {"list": [` + vars + `]},
		"panels": [{"type": "row", "title": "Row", "collapsed": true, "panels": [` + panels + `]}]}`
	if err := os.WriteFile(filepath.Join(dir, "synthetic.json"), []byte(d), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const syntheticVars = `
	{"name": "cluster", "multi": false, "includeAll": true, "allValue": null, "current": {"value": "$__all"}},
	{"name": "resource", "multi": true, "includeAll": false, "current": {"value": ["configmaps", "deployments.apps"]}},
	{"name": "job", "multi": false, "includeAll": false, "current": {"value": "rvsync-slo"}},
	{"name": "unset", "multi": false, "includeAll": false}`

// Every variable syntax and built-in at a 30-day range, worked out by hand:
// a full-width panel is 1920 px, 30 d / 1920 = 1350 s, rounded to 20 m;
// $__rate_interval max(20 m + 30 s, 4 × 30 s) = 20m30s. A panel of 100
// points with a 5 m Min interval and a 1 m Min step: 30 d / 100 = 7.2 h,
// rounded to 6 h; the rate interval max(6 h + 1 m, 4 × 1 m).
func TestLoadPanelsVariables(t *testing.T) {
	panels := `
	{"id": 2, "type": "timeseries", "title": "Wide", "gridPos": {"w": 24}, "datasource": {"type": "prometheus", "uid": "${datasource}"},
	 "targets": [
		{"refId": "A", "expr": "sum(rate(x{cluster=~\"${cluster}\", resource=~\"[[resource]]\", job=\"$job\"}[$__rate_interval])) + count_over_time(x[${__range}]) / $__range_s + avg_over_time(x[$__interval]) * $__interval_ms + label_replace(y, \"a\", \"$1\", \"b\", \"(.*)\")"},
		{"refId": "B", "expr": "x", "intervalFactor": 2},
		{"refId": "C", "expr": "x", "hide": true},
		{"refId": "D", "expr": "{app=\"x\"}", "datasource": {"type": "loki"}}]},
	{"id": 3, "type": "stat", "title": "Narrow", "gridPos": {"w": 6}, "maxDataPoints": 100, "interval": "5m",
	 "targets": [{"refId": "A", "expr": "rate(x[$__rate_interval])", "interval": "1m", "range": true, "instant": true}]}`
	qs, err := loadPanels(syntheticDashboard(t, syntheticVars, panels), panelsNow, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		ref, expr  string
		instant    bool
		step       time.Duration
		start, end string
	}
	const day = "2006-01-02 15:04:05"
	want := []got{
		{"Wide A", `sum(rate(x{cluster=~".*", resource=~"(configmaps|deployments\\.apps)", job="rvsync-slo"}[20m30s])) + count_over_time(x[2592000s]) / 2592000 + avg_over_time(x[20m]) * 1200000 + label_replace(y, "a", "$1", "b", "(.*)")`,
			false, 20 * time.Minute, "2026-02-02 05:00:00", "2026-03-04 05:00:00"},
		{"Wide B", "x", false, 40 * time.Minute, "2026-02-02 04:40:00", "2026-03-04 04:40:00"},
		{"Narrow A", "rate(x[6h1m0s])", false, 6 * time.Hour, "2026-02-02 00:00:00", "2026-03-04 00:00:00"},
		{"Narrow A", "rate(x[6h1m0s])", true, 0, "2026-03-04 05:06:47", "2026-03-04 05:06:47"},
	}
	var all []got
	for _, q := range qs {
		if q.row != "Row" {
			t.Errorf("%s: row %q, want Row", q.where(), q.row)
		}
		all = append(all, got{q.panel + " " + q.refID, q.expr, q.instant, q.step, q.start.Format(day), q.end.Format(day)})
	}
	if len(all) != len(want) {
		t.Fatalf("queries:\n%+v\nwant\n%+v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("query %d:\n got %+v\nwant %+v", i, all[i], want[i])
		}
	}
}

// A variable the dashboard does not declare, one without a value, a format
// and a field are errors naming the dashboard, the panel and the variable.
func TestLoadPanelsVariableErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`x{a="$nosuch"}`, "$nosuch: not a variable of the dashboard"},
		{`x[$__from]`, "$__from: not a variable of the dashboard"},
		{`x{a="${unset}"}`, "${unset}: no value given and no default selection"},
		{`x{a=~"${resource:csv}"}`, "${resource:csv}: fields and formats are not supported"},
		{`x{a=~"[[resource:regex]]"}`, "[[resource:regex]]: fields and formats are not supported"},
		{`x{a="${job.text}"}`, "${job.text}: fields and formats are not supported"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			expr, _ := json.Marshal(tc.expr)
			panels := `{"id": 7, "type": "timeseries", "title": "The panel", "gridPos": {"w": 12}, "targets": [{"refId": "A", "expr": ` + string(expr) + `}]}`
			_, err := loadPanels(syntheticDashboard(t, syntheticVars, panels), panelsNow, 30*time.Second, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, part := range []string{"dashboard synthetic", `panel "The panel"`, "target A", tc.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not say %q", err, part)
				}
			}
		})
	}
	// All on a variable without an All option.
	panels := `{"id": 7, "type": "timeseries", "title": "The panel", "gridPos": {"w": 12}, "targets": [{"refId": "A", "expr": "x{job=\"$job\"}"}]}`
	_, err := loadPanels(syntheticDashboard(t, syntheticVars, panels), panelsNow, 30*time.Second, map[string]string{"job": allSelected})
	if err == nil || !strings.Contains(err.Error(), "$job: selects All, but the variable has no All option") {
		t.Errorf("error %v, want $job has no All option", err)
	}
	// A name in vars no dashboard declares (a typo) would leave the
	// default selection in place unnoticed.
	_, err = loadPanels(syntheticDashboard(t, syntheticVars, panels), panelsNow, 30*time.Second, map[string]string{"resouce": "configmaps"})
	if err == nil || !strings.Contains(err.Error(), `variable "resouce": no dashboard`) {
		t.Errorf("error %v, want resouce declared by no dashboard", err)
	}
}

// fakePrometheus answers the query API: a query named slow after delay at
// every call, spiky after delay at its first call only, fail with an error
// status; a range query with three series, an instant query with two. It
// records the forms it received and the most calls it had at once.
type fakePrometheus struct {
	delay time.Duration

	mu       sync.Mutex
	inFlight int
	most     int
	calls    map[string]int
	forms    map[string]string // by query: path and form of the last call
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "want a POST form", http.StatusMethodNotAllowed)
		return
	}
	query := r.PostForm.Get("query")
	f.mu.Lock()
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.calls[query]++
	call := f.calls[query]
	f.forms[query] = r.URL.Path + "?" + r.PostForm.Encode()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if query == "slow" || (query == "spiky" && call == 1) {
		time.Sleep(f.delay)
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case query == "fail":
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"boom"}`)
	case r.URL.Path == "/api/v1/query_range":
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1,"1"]]},{"metric":{"a":"2"},"values":[[1,"1"]]},{"metric":{"a":"3"},"values":[[1,"1"]]}]}}`)
	default:
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"1"]}]}}`)
	}
}

// timePanels against a Prometheus whose delays are known: the query slowed
// at every call has p50 and p95 at least the delay, the one slowed once in
// 20 calls has only its max there, the fast one none; one call at a time;
// Grafana's form.
func TestTimePanels(t *testing.T) {
	const delay = 100 * time.Millisecond
	fake := &fakePrometheus{delay: delay, calls: map[string]int{}, forms: map[string]string{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	start := time.Unix(1700000000, 0)
	rng := func(expr string) panelQuery {
		return panelQuery{dashboard: "d", dashboardTitle: "D", panel: expr + " panel", refID: "A", expr: expr, start: start, end: start.Add(time.Hour), step: 20 * time.Second}
	}
	fast := panelQuery{dashboard: "d", dashboardTitle: "D", panel: "fast panel", refID: "B", expr: "fast", instant: true, start: start, end: start.Add(time.Hour)}
	const repeats = 20
	ts, err := timePanels(context.Background(), srv.URL+"/", []panelQuery{rng("slow"), rng("spiky"), fast}, repeats)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("%d timings, want 3", len(ts))
	}
	slow, spiky, quick := ts[0], ts[1], ts[2]
	if slow.p50 < delay || slow.p95 < delay || slow.max < delay {
		t.Errorf("slow: p50 %v p95 %v max %v, want all at least %v", slow.p50, slow.p95, slow.max, delay)
	}
	if spiky.max < delay || spiky.p95 >= delay || spiky.p50 >= delay {
		t.Errorf("spiky: p50 %v p95 %v max %v, want only the max at least %v", spiky.p50, spiky.p95, spiky.max, delay)
	}
	if quick.p95 >= delay {
		t.Errorf("fast: p95 %v, want under %v", quick.p95, delay)
	}
	for i, want := range []int{3, 3, 2} {
		if ts[i].series != want || ts[i].calls != repeats {
			t.Errorf("%s: %d series in %d calls, want %d in %d", ts[i].query.expr, ts[i].series, ts[i].calls, want, repeats)
		}
	}
	for q, want := range map[string]string{
		"slow": "/api/v1/query_range?end=1700003600&query=slow&start=1700000000&step=20",
		"fast": "/api/v1/query?query=fast&time=1700003600",
	} {
		if fake.forms[q] != want {
			t.Errorf("%s: sent %s, want %s", q, fake.forms[q], want)
		}
	}
	for q, n := range fake.calls {
		if n != repeats {
			t.Errorf("%s: %d calls, want %d", q, n, repeats)
		}
	}
	if fake.most != 1 {
		t.Errorf("%d calls at once, want 1", fake.most)
	}

	// An error status fails the timing, naming the panel.
	_, err = timePanels(context.Background(), srv.URL, []panelQuery{fast, rng("fail")}, 2)
	if err == nil {
		t.Fatal("no error for an error status")
	}
	for _, part := range []string{`panel "fail panel"`, "target A", "HTTP 422", "execution: boom"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
}

// nearestRank: the p50 and p95 of 20 calls are the 10th and the 19th.
func TestNearestRank(t *testing.T) {
	var v []time.Duration
	for i := 1; i <= 20; i++ {
		v = append(v, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		v    []time.Duration
		q    float64
		want time.Duration
	}{
		{v, 0.50, 10 * time.Millisecond},
		{v, 0.95, 19 * time.Millisecond},
		{v, 1, 20 * time.Millisecond},
		{v[:1], 0.95, time.Millisecond},
		{v[:3], 0.50, 2 * time.Millisecond},
		{v[:10], 0.95, 10 * time.Millisecond},
	} {
		if got := nearestRank(tc.v, tc.q); got != tc.want {
			t.Errorf("nearestRank(%d values, %v) = %v, want %v", len(tc.v), tc.q, got, tc.want)
		}
	}
}

// The table lists the slowest p95 first, names the row, panel and target,
// and escapes pipes.
func TestPanelTable(t *testing.T) {
	q := func(row, panel, ref string, instant bool) panelQuery {
		return panelQuery{dashboard: "d", dashboardTitle: "rvsync / D", row: row, panel: panel, refID: ref, instant: instant}
	}
	ms := time.Millisecond
	ts := []panelTiming{
		{query: q("", "Fast", "A", false), p50: 1 * ms, p95: 2 * ms, max: 3 * ms, series: 4},
		{query: q("Trends", "a | b", "B", true), p50: 300 * ms, p95: 1200 * ms, max: 1500 * ms, series: 200},
		{query: q("Trends", "Middle", "A", false), p50: 10 * ms, p95: 20 * ms, max: 30 * ms, series: 7},
	}
	want := "| dashboard | panel | p50 ms | p95 ms | max ms | series |\n| --- | --- | ---: | ---: | ---: | ---: |\n" +
		"| rvsync / D | Trends › a \\| b (B, instant) | 300.0 | 1200.0 | 1500.0 | 200 |\n" +
		"| rvsync / D | Trends › Middle (A) | 10.0 | 20.0 | 30.0 | 7 |\n" +
		"| rvsync / D | Fast (A) | 1.0 | 2.0 | 3.0 | 4 |\n"
	if got := panelTable(ts); got != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	if got, want := worstPanel(ts), `1200 ms (d / a \| b B)`; got != want {
		t.Errorf("worstPanel = %q, want %q", got, want)
	}
	if got := worstPanel(nil); got != "–" {
		t.Errorf("worstPanel(nil) = %q, want –", got)
	}
}
