package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// panelQuery is one query Grafana sends to Prometheus for one target of a
// dashboard panel, at the dashboard's default time range.
type panelQuery struct {
	dashboard      string // uid
	dashboardTitle string
	row            string // title of the row the panel is in; "" above the first row
	panelID        int
	panel          string // title
	refID          string
	expr           string // PromQL with every variable substituted, as Grafana sends it
	// instant: an instant query at end; otherwise a range query from start
	// to end (both aligned to step, as Grafana aligns them).
	instant    bool
	start, end time.Time
	step       time.Duration // 0 for an instant query
}

// where names the query in errors: dashboard, panel and target.
func (q panelQuery) where() string {
	return fmt.Sprintf("dashboard %s, panel %q (id %d), target %s", q.dashboard, q.panel, q.panelID, q.refID)
}

// label names the query in the table: the row, the panel and the target.
func (q panelQuery) label() string {
	s := q.panel + " (" + q.refID
	if q.instant {
		s += ", instant"
	}
	s += ")"
	if q.row != "" {
		s = q.row + " › " + s
	}
	return s
}

// The parts of Grafana's dashboard JSON the queries depend on.
type (
	grafanaDashboard struct {
		UID   string `json:"uid"`
		Title string `json:"title"`
		Time  struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"time"`
		Templating struct {
			List []grafanaTemplateVar `json:"list"`
		} `json:"templating"`
		Panels []grafanaPanel `json:"panels"`
	}
	grafanaTemplateVar struct {
		Name       string  `json:"name"`
		Multi      bool    `json:"multi"`
		IncludeAll bool    `json:"includeAll"`
		AllValue   *string `json:"allValue"`
		Current    *struct {
			Value json.RawMessage `json:"value"` // a string, or a list of them for a multi-value variable
		} `json:"current"`
	}
	grafanaPanel struct {
		ID            int             `json:"id"`
		Type          string          `json:"type"`
		Title         string          `json:"title"`
		GridPos       struct{ W int } `json:"gridPos"`
		MaxDataPoints *int64          `json:"maxDataPoints"`
		Interval      *string         `json:"interval"` // the panel's "Min interval"
		Datasource    json.RawMessage `json:"datasource"`
		Targets       []grafanaTarget `json:"targets"`
		Panels        []grafanaPanel  `json:"panels"` // a collapsed row's
	}
	grafanaTarget struct {
		RefID          string          `json:"refId"`
		Expr           string          `json:"expr"`
		Instant        bool            `json:"instant"`
		Range          bool            `json:"range"`
		Hide           bool            `json:"hide"`
		Interval       string          `json:"interval"` // the query's "Min step"
		IntervalFactor int64           `json:"intervalFactor"`
		Datasource     json.RawMessage `json:"datasource"`
	}
)

// loadPanels returns the queries Grafana sends to Prometheus for every
// target of every panel (rows' panels included) of the dashboards in dir,
// opened at now with their default time range, for a Prometheus datasource
// whose scrape interval is scrape. Template variables take their value from
// vars, else the dashboard's default selection; the value "$__all" selects
// All. A variable with neither, or a $-variable the dashboard does not
// declare, is an error naming the dashboard, the panel and the variable; so
// is a name in vars that no dashboard declares.
func loadPanels(dir string, now time.Time, scrape time.Duration, vars map[string]string) ([]panelQuery, error) {
	if scrape <= 0 {
		return nil, fmt.Errorf("scrape interval %v: must be positive", scrape)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboards (*.json) in %s", dir)
	}
	var out []panelQuery
	declared := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var d grafanaDashboard
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range d.Templating.List {
			declared[v.Name] = true
		}
		qs, err := dashboardQueries(d, now, scrape, vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, qs...)
	}
	for name := range vars {
		if !declared[name] {
			return nil, fmt.Errorf("variable %q: no dashboard in %s declares it", name, dir)
		}
	}
	return out, nil
}

// dashboardQueries returns the queries of one dashboard's panels.
func dashboardQueries(d grafanaDashboard, now time.Time, scrape time.Duration, vars map[string]string) ([]panelQuery, error) {
	from, err := grafanaTime(d.Time.From, now)
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: time.from: %w", d.UID, err)
	}
	to, err := grafanaTime(d.Time.To, now)
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: time.to: %w", d.UID, err)
	}
	if !from.Before(to) {
		return nil, fmt.Errorf("dashboard %s: time range %s to %s is empty", d.UID, d.Time.From, d.Time.To)
	}
	defs := make(map[string]grafanaTemplateVar, len(d.Templating.List))
	for _, v := range d.Templating.List {
		defs[v.Name] = v
	}
	var out []panelQuery
	var walk func(ps []grafanaPanel, row string) error
	walk = func(ps []grafanaPanel, row string) error {
		for _, p := range ps {
			if p.Type == "row" {
				row = p.Title
				if err := walk(p.Panels, row); err != nil {
					return err
				}
				continue
			}
			for _, t := range p.Targets {
				qs, err := targetQueries(d, defs, row, p, t, from, to, scrape, vars)
				if err != nil {
					return err
				}
				out = append(out, qs...)
			}
		}
		return nil
	}
	return out, walk(d.Panels, "")
}

// targetQueries returns the queries Grafana runs for target t of panel p:
// none for a hidden target or another datasource's, else a range query, an
// instant query, or both (a target that asks for both).
func targetQueries(d grafanaDashboard, defs map[string]grafanaTemplateVar, row string, p grafanaPanel, t grafanaTarget, from, to time.Time, scrape time.Duration, vars map[string]string) ([]panelQuery, error) {
	ds := datasourceType(t.Datasource)
	if ds == "" {
		ds = datasourceType(p.Datasource)
	}
	if t.Hide || strings.TrimSpace(t.Expr) == "" || (ds != "" && ds != "prometheus") {
		return nil, nil
	}
	q := panelQuery{dashboard: d.UID, dashboardTitle: d.Title, row: row, panelID: p.ID, panel: p.Title, refID: t.RefID}
	iv, err := grafanaIntervals(p, t, to.Sub(from), scrape)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q.where(), err)
	}
	if q.expr, err = substitute(t.Expr, iv.builtins(to.Sub(from)), defs, vars); err != nil {
		return nil, fmt.Errorf("%s: %w", q.where(), err)
	}
	var out []panelQuery
	// Grafana runs a target with neither flag (an older dashboard's) as a
	// range query.
	if t.Range || !t.Instant {
		r := q
		r.start, r.end, r.step = alignToStep(from, iv.step), alignToStep(to, iv.step), iv.step
		out = append(out, r)
	}
	if t.Instant {
		// Grafana evaluates an instant query at the range's end, not aligned.
		i := q
		i.instant, i.start, i.end = true, to, to
		out = append(out, i)
	}
	return out, nil
}

// datasourceType returns the type of a datasource reference, "" when it
// has none (null, or an old dashboard's datasource name).
func datasourceType(raw json.RawMessage) string {
	var ref struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &ref) != nil {
		return ""
	}
	return ref.Type
}

// relativeTime is a time of Grafana's time picker relative to now.
var relativeTime = regexp.MustCompile(`^now-([0-9]+)([smhdwMy])$`)

// grafanaTime resolves a dashboard's "now" or "now-<n><unit>" (now-6h,
// now-30d) against now as Grafana's date math does, in UTC.
func grafanaTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	m := relativeTime.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, fmt.Errorf("%q: only now and now-<n><unit> are supported", s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	switch m[2] {
	case "s":
		return now.Add(-time.Duration(n) * time.Second), nil
	case "m":
		return now.Add(-time.Duration(n) * time.Minute), nil
	case "h":
		return now.Add(-time.Duration(n) * time.Hour), nil
	case "d":
		return now.AddDate(0, 0, -n), nil
	case "w":
		return now.AddDate(0, 0, -7*n), nil
	case "M":
		return now.AddDate(0, -n, 0), nil
	default: // "y"
		return now.AddDate(-n, 0, 0), nil
	}
}

// The panel width Grafana's default maxDataPoints is taken from, and the
// limit on points per series its Prometheus datasource keeps under.
const (
	// dashboardWidthPx is the width assumed for a dashboard's 24 grid
	// columns: a full-HD screen. A panel gridPos.w columns wide is w/24 of
	// it (padding, a few pixels, is left out: the rounding below absorbs it).
	dashboardWidthPx = 1920
	gridColumns      = 24
	// safeResolution is Grafana's safeResolution: Prometheus refuses a range
	// query of more than 11,000 points per series.
	safeResolution = 11000
)

// queryIntervals are the intervals Grafana derives for one target.
type queryIntervals struct {
	interval time.Duration // the browser's interval (intervalMs of the request)
	step     time.Duration // the range query's step, and $__interval
	rate     time.Duration // $__rate_interval
}

// grafanaIntervals computes a target's step and $__rate_interval as Grafana
// 11/12 does for a Prometheus datasource whose scrape interval
// (jsonData.timeInterval) is scrape, and whose panel is as wide as its grid
// columns make it on a dashboardWidthPx screen. This is Grafana's own rule
// (Grafana 10.3 on), followed from its source rather than approximated:
//
//   - maxDataPoints is the panel's, or by default its width in pixels
//     (Grafana's documentation, Query options: "The default value is the
//     width (or number of pixels) of the graph").
//   - the browser's interval is roundInterval(range / maxDataPoints), at
//     least the panel's Min interval or else the datasource's scrape
//     interval (grafana-data's rangeutil.calculateInterval).
//   - the backend's step: its minimum is the target's Min step if set, else
//     that interval; range / maxDataPoints below the minimum gives the
//     minimum, otherwise it is rounded with roundInterval; then at least
//     roundInterval(range / 11000), times intervalFactor (promlib's
//     calculatePrometheusInterval and intervalv2.Calculate).
//   - $__rate_interval is max(interval + scrape, 4 × scrape), scrape being
//     the target's Min step when set, else the datasource's scrape interval
//     (promlib's calculateRateInterval; grafana/grafana#77234 states it).
func grafanaIntervals(p grafanaPanel, t grafanaTarget, rng time.Duration, scrape time.Duration) (queryIntervals, error) {
	maxDataPoints := int64(p.GridPos.W * dashboardWidthPx / gridColumns)
	if p.MaxDataPoints != nil && *p.MaxDataPoints > 0 {
		maxDataPoints = *p.MaxDataPoints
	}
	if maxDataPoints <= 0 {
		return queryIntervals{}, fmt.Errorf("gridPos.w %d: no width to take maxDataPoints from", p.GridPos.W)
	}
	lowLimit := scrape
	if p.Interval != nil && *p.Interval != "" {
		d, err := grafanaDuration(*p.Interval)
		if err != nil {
			return queryIntervals{}, fmt.Errorf("min interval: %w", err)
		}
		lowLimit = d
	}
	var iv queryIntervals
	perPoint := rng / time.Duration(maxDataPoints)
	iv.interval = max(roundInterval(perPoint), lowLimit)

	minStep, rateStep := iv.interval, scrape
	byRate := false
	switch t.Interval {
	case "", "$__interval", "${__interval}":
	case "0s": // no Min step to the step, but Grafana takes it as the rate's scrape
		rateStep = 0
	case "$__rate_interval", "${__rate_interval}":
		byRate = true
	default:
		d, err := grafanaDuration(t.Interval)
		if err != nil {
			return queryIntervals{}, fmt.Errorf("min step: %w", err)
		}
		minStep, rateStep = d, d
	}
	calculated := minStep
	if perPoint >= minStep {
		calculated = roundInterval(perPoint)
	}
	adjusted := max(calculated, roundInterval(rng/safeResolution))
	rate := func(interval, scrape time.Duration) time.Duration { return max(interval+scrape, 4*scrape) }
	switch {
	case byRate:
		iv.step = rate(adjusted, scrape)
		iv.rate = iv.step
	default:
		iv.step = adjusted * time.Duration(max(t.IntervalFactor, 1))
		if t.Interval == "$__interval" || t.Interval == "${__interval}" {
			rateStep = iv.step
		}
		iv.rate = rate(iv.interval, rateStep)
	}
	return iv, nil
}

// builtins are the values of Grafana's interval and range variables for a
// query over rng, formatted as its Prometheus backend formats them.
func (iv queryIntervals) builtins(rng time.Duration) map[string]string {
	rangeS := rng.Round(time.Second) / time.Second
	return map[string]string{
		"__interval":         formatInterval(iv.step),
		"__interval_ms":      strconv.FormatInt(iv.step.Milliseconds(), 10),
		"__range":            strconv.FormatInt(int64(rangeS), 10) + "s",
		"__range_s":          strconv.FormatInt(int64(rangeS), 10),
		"__range_ms":         strconv.FormatInt(rng.Milliseconds(), 10),
		"__rate_interval":    iv.rate.String(),
		"__rate_interval_ms": strconv.FormatInt(iv.rate.Milliseconds(), 10),
	}
}

// roundInterval is Grafana's gtime.RoundInterval: a predetermined, rounder
// (mostly lower) duration near d.
func roundInterval(d time.Duration) time.Duration {
	const ms = time.Millisecond
	// Each step: up to bound, the result.
	for _, s := range [...]struct{ bound, to time.Duration }{
		{10 * ms, 1 * ms}, {15 * ms, 10 * ms}, {35 * ms, 20 * ms}, {75 * ms, 50 * ms},
		{150 * ms, 100 * ms}, {350 * ms, 200 * ms}, {750 * ms, 500 * ms},
		{1500 * ms, time.Second}, {3500 * ms, 2 * time.Second}, {7500 * ms, 5 * time.Second},
		{12500 * ms, 10 * time.Second}, {17500 * ms, 15 * time.Second}, {25 * time.Second, 20 * time.Second},
		{45 * time.Second, 30 * time.Second}, {90 * time.Second, time.Minute}, {210 * time.Second, 2 * time.Minute},
		{450 * time.Second, 5 * time.Minute}, {750 * time.Second, 10 * time.Minute}, {1050 * time.Second, 15 * time.Minute},
		{1500 * time.Second, 20 * time.Minute}, {2700 * time.Second, 30 * time.Minute}, {5400 * time.Second, time.Hour},
		{9000 * time.Second, 2 * time.Hour}, {16200 * time.Second, 3 * time.Hour}, {32400 * time.Second, 6 * time.Hour},
		{24 * time.Hour, 12 * time.Hour}, {48 * time.Hour, 24 * time.Hour}, {7 * 24 * time.Hour, 24 * time.Hour},
		{21 * 24 * time.Hour, 7 * 24 * time.Hour},
	} {
		if d <= s.bound {
			return s.to
		}
	}
	if d < 42*24*time.Hour {
		return 30 * 24 * time.Hour
	}
	return 365 * 24 * time.Hour
}

// formatInterval is Grafana's gtime.FormatInterval, the form of
// $__interval: the largest whole unit, 30s, 2m, 1h, 1d.
func formatInterval(d time.Duration) string {
	for _, u := range [...]struct {
		d    time.Duration
		unit string
	}{{365 * 24 * time.Hour, "y"}, {24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d >= u.d {
			return strconv.FormatInt(int64(d/u.d), 10) + u.unit
		}
	}
	return "1ms"
}

// dayUnits is an interval in days, weeks or years, which Go's durations lack.
var dayUnits = regexp.MustCompile(`^([0-9]+)([dwy])$`)

// grafanaDuration parses an interval of a panel or target option ("30s",
// "1m", ">1m", "2d"; a bare number is seconds), as Grafana does.
func grafanaDuration(s string) (time.Duration, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, ">"), "<")
	if _, err := strconv.Atoi(s); err == nil {
		s += "s"
	}
	if m := dayUnits.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		day := map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}[m[2]]
		return time.Duration(n) * day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}

// alignToStep rounds t down to a multiple of step, as Grafana aligns a
// range query's start and end (its browser's UTC offset taken as 0).
func alignToStep(t time.Time, step time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-t.UnixNano()%int64(step)).UTC()
}

// grafanaVar matches Grafana's variable syntaxes: $name, [[name]] or
// [[name:format]], ${name}, ${name.field} or ${name:format} (the regexp of
// Grafana's TemplateSrv).
var grafanaVar = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// allSelected is the value of a variable whose All option is selected.
const allSelected = "$__all"

// substitute replaces every variable of expr in one pass: Grafana's
// built-ins from builtins, and the dashboard's template variables (defs)
// from vars or their default selection, escaped as Grafana's Prometheus
// datasource escapes them (interpolateQueryExpr). $1, $2… are left alone:
// they are label_replace's references, not variables.
func substitute(expr string, builtins map[string]string, defs map[string]grafanaTemplateVar, vars map[string]string) (string, error) {
	var b strings.Builder
	last := 0
	for _, m := range grafanaVar.FindAllStringSubmatchIndex(expr, -1) {
		group := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return expr[m[2*i]:m[2*i+1]]
		}
		whole := expr[m[0]:m[1]]
		name := cmp.Or(group(1), group(2), group(4))
		format := cmp.Or(group(3), group(6))
		b.WriteString(expr[last:m[0]])
		last = m[1]
		if strings.Trim(name, "0123456789") == "" {
			b.WriteString(whole)
			continue
		}
		if group(5) != "" || format != "" {
			return "", fmt.Errorf("variable %s: fields and formats are not supported", whole)
		}
		if v, ok := builtins[name]; ok {
			b.WriteString(v)
			continue
		}
		def, ok := defs[name]
		if !ok {
			return "", fmt.Errorf("variable %s: not a variable of the dashboard", whole)
		}
		v, err := templateValue(def, vars)
		if err != nil {
			return "", fmt.Errorf("variable %s: %w", whole, err)
		}
		b.WriteString(v)
	}
	b.WriteString(expr[last:])
	return b.String(), nil
}

// templateValue returns the text that replaces variable def: the value from
// vars, else the dashboard's default selection. All is the variable's
// allValue; without one Grafana would send every option's value as
// (v1|v2|…), which .* stands for here (the options are a query's answer).
// A multi-value or All-capable variable's values are regexp-escaped.
func templateValue(def grafanaTemplateVar, vars map[string]string) (string, error) {
	var values []string
	if v, ok := vars[def.Name]; ok {
		values = []string{v}
	} else if def.Current != nil && len(def.Current.Value) > 0 {
		var one string
		if json.Unmarshal(def.Current.Value, &one) == nil {
			values = []string{one}
		} else if err := json.Unmarshal(def.Current.Value, &values); err != nil {
			return "", fmt.Errorf("default selection %s: %w", def.Current.Value, err)
		}
	}
	if len(values) == 0 {
		return "", errors.New("no value given and no default selection")
	}
	regex := def.Multi || def.IncludeAll
	if slices.Contains(values, allSelected) {
		if !regex {
			return "", errors.New("selects All, but the variable has no All option")
		}
		if def.AllValue != nil && *def.AllValue != "" {
			return *def.AllValue, nil
		}
		return ".*", nil
	}
	if !regex {
		return literalEscape(values[0]), nil
	}
	for i, v := range values {
		values[i] = regexpEscape(v)
	}
	if len(values) == 1 {
		return values[0], nil
	}
	return "(" + strings.Join(values, "|") + ")", nil
}

// literalEscape is Grafana's prometheusRegularEscape (its classic
// behaviour), for a variable that is neither multi-value nor has All.
func literalEscape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\\'`).Replace(v)
}

// regexpEscape is Grafana's prometheusSpecialRegexEscape: the value as a
// regexp literal inside a PromQL string, so backslashes and the regexp's
// metacharacters are escaped with a (PromQL-escaped) backslash.
func regexpEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\\\`)
		case strings.ContainsRune(`$^*{}[]+?.()|`, r):
			b.WriteString(`\\`)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// panelTiming is how long Prometheus took to answer one panel query over
// repeated calls.
type panelTiming struct {
	query         panelQuery
	calls         int
	p50, p95, max time.Duration // nearest rank over the calls
	series        int           // in the last answer
}

// timePanels runs each query repeats times against the Prometheus at promURL,
// one call at a time so that no call competes with another, and times each
// call's wall time from sending the request to having read the answer. Every
// call is counted, the first (colder) one included. A call that fails is an
// error naming the panel.
func timePanels(ctx context.Context, promURL string, qs []panelQuery, repeats int) ([]panelTiming, error) {
	if repeats < 1 {
		return nil, fmt.Errorf("repeats %d: must be at least 1", repeats)
	}
	u, err := url.Parse(promURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("the Prometheus URL %q is not absolute", promURL)
	}
	base := strings.TrimSuffix(promURL, "/")
	client := &http.Client{}
	out := make([]panelTiming, 0, len(qs))
	for _, q := range qs {
		took := make([]time.Duration, repeats)
		t := panelTiming{query: q, calls: repeats}
		for i := range took {
			if took[i], t.series, err = queryPrometheus(ctx, client, base, q); err != nil {
				return nil, fmt.Errorf("%s: %w", q.where(), err)
			}
		}
		slices.Sort(took)
		t.p50, t.p95, t.max = nearestRank(took, 0.50), nearestRank(took, 0.95), took[len(took)-1]
		out = append(out, t)
	}
	return out, nil
}

// nearestRank is the q-quantile of sorted by the nearest-rank method: the
// smallest value at least a share q of the values are at most.
func nearestRank[T cmp.Ordered](sorted []T, q float64) T {
	i := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// queryPrometheus sends q to Prometheus' HTTP API as Grafana does (a POST
// form) and returns the call's wall time and the number of series answered.
func queryPrometheus(ctx context.Context, client *http.Client, base string, q panelQuery) (time.Duration, int, error) {
	form := url.Values{"query": {q.expr}}
	endpoint := "/api/v1/query_range"
	if q.instant {
		endpoint = "/api/v1/query"
		form.Set("time", promTime(q.end))
	} else {
		form.Set("start", promTime(q.start))
		form.Set("end", promTime(q.end))
		form.Set("step", strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64))
	}
	began := time.Now()
	status, body, err := postForm(ctx, client, base+endpoint, form)
	took := time.Since(began)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", endpoint, err)
	}
	var answer struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	jsonErr := json.Unmarshal(body, &answer)
	if status != http.StatusOK || jsonErr != nil || answer.Status != "success" {
		if jsonErr == nil && answer.Error != "" {
			return 0, 0, fmt.Errorf("%s: HTTP %d: %s: %s", endpoint, status, answer.ErrorType, answer.Error)
		}
		return 0, 0, fmt.Errorf("%s: HTTP %d: %.200s", endpoint, status, body)
	}
	switch answer.Data.ResultType {
	case "matrix", "vector":
		var series []json.RawMessage
		if err := json.Unmarshal(answer.Data.Result, &series); err != nil {
			return 0, 0, fmt.Errorf("%s: %s result: %w", endpoint, answer.Data.ResultType, err)
		}
		return took, len(series), nil
	default: // scalar, string: one value
		return took, 1, nil
	}
}

// promTime formats t as Prometheus' API takes it: Unix seconds.
func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
}

// panelTable renders the timings as a Markdown table, slowest p95 first.
func panelTable(ts []panelTiming) string {
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b panelTiming) int {
		return cmp.Or(cmp.Compare(b.p95, a.p95), cmp.Compare(b.p50, a.p50),
			cmp.Compare(a.query.dashboard, b.query.dashboard), cmp.Compare(a.query.panelID, b.query.panelID),
			cmp.Compare(a.query.refID, b.query.refID))
	})
	var b strings.Builder
	b.WriteString("| dashboard | panel | p50 ms | p95 ms | max ms | series |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, t := range ts {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f | %d |\n", tableCell(t.query.dashboardTitle), tableCell(t.query.label()),
			t.p50.Seconds()*1000, t.p95.Seconds()*1000, t.max.Seconds()*1000, t.series)
	}
	return b.String()
}

// worstPanel is the slowest p95 of ts and its panel, for a summary cell.
func worstPanel(ts []panelTiming) string {
	if len(ts) == 0 {
		return "–"
	}
	w := slices.MaxFunc(ts, func(a, b panelTiming) int { return cmp.Compare(a.p95, b.p95) })
	return fmt.Sprintf("%.0f ms (%s / %s %s)", w.p95.Seconds()*1000, w.query.dashboard, tableCell(w.query.panel), w.query.refID)
}

// tableCell escapes the pipes of s for a Markdown table cell.
func tableCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
