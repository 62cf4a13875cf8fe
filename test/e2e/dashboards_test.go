//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// grafanaDashboard is the part of a dashboard's JSON model the check reads.
type grafanaDashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaVariable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

type grafanaPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's panels
}

// panelQuery is one target of one panel, named for failure messages.
type panelQuery struct {
	where string // dashboard / panel (refId)
	expr  string
}

// loadDashboards reads the chart's generated dashboards.
func loadDashboards() ([]grafanaDashboard, error) {
	dir, err := chart.Dir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "files", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no dashboards in %s: %v", dir, err)
	}
	var out []grafanaDashboard
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var d grafanaDashboard
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// queries returns every panel target of d, rows included.
func (d grafanaDashboard) queries() []panelQuery {
	var out []panelQuery
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, panelQuery{where: fmt.Sprintf("%s / %q (%s)", d.Title, p.Title, tg.RefID), expr: tg.Expr})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaVars holds the values Grafana substitutes into queries.
type grafanaVars map[string]string

// builtinVars are Grafana's interval variables for a range query over r,
// with $__interval = the step and $__rate_interval as Grafana computes it:
// max($__interval + scrape interval, 4 × scrape interval).
func builtinVars(r promv1.Range) grafanaVars {
	rate := max(r.Step+scrapeInterval, 4*scrapeInterval)
	rng := r.End.Sub(r.Start).Round(time.Second)
	return grafanaVars{
		"__interval":      model.Duration(r.Step).String(),
		"__interval_ms":   fmt.Sprint(r.Step.Milliseconds()),
		"__rate_interval": model.Duration(rate).String(),
		"__range":         model.Duration(rng).String(),
		"__range_s":       fmt.Sprint(int(rng.Seconds())),
		"__range_ms":      fmt.Sprint(rng.Milliseconds()),
	}
}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// substitute replaces $name, ${name} and [[name]]; an unknown variable is
// an error.
func (v grafanaVars) substitute(expr string) (string, error) {
	var unknown []string
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		val, ok := v[name]
		if !ok {
			unknown = append(unknown, ref)
			return ref
		}
		return val
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variables %v in %s", unknown, expr)
	}
	return out, nil
}

var labelValuesCall = regexp.MustCompile(`^label_values\((?:(.*),\s*)?(\w+)\)$`)

// allSelection is Grafana's value of a variable's "All" option.
const allSelection = "$__all"

// resolveVariables returns d's default selection over r (see selections):
// the variables as in chosen, the others as the dashboard opens.
func (p *prometheusServer) resolveVariables(d grafanaDashboard, r promv1.Range, chosen grafanaVars) (grafanaVars, error) {
	sels, err := p.selections(d, r, chosen, false)
	if err != nil {
		return nil, err
	}
	return sels[0], nil
}

// selections evaluates d's query variables in order against p over r and
// returns the selections to run d's queries with, the dashboard's default
// first. A variable is as in chosen (one of the query's values, or
// allSelection), or else the dashboard's default; "All" becomes the
// allValue. With each, a variable that shows one value at a time (no All
// option, e.g. the resource detail dashboard's resource) and that chosen
// leaves open is also tried at every other value of its query: its reader
// picks the resource to study, so a panel must show data for some pick, not
// for the one the dashboard opens on (the convergence panels have none for
// configmaps). A query variable without values is an error.
func (p *prometheusServer) selections(d grafanaDashboard, r promv1.Range, chosen grafanaVars, each bool) ([]grafanaVars, error) {
	sels := []grafanaVars{builtinVars(r)}
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			for _, vars := range sels {
				vars[v.Name] = "prometheus"
			}
			continue
		case "query":
		default:
			return nil, fmt.Errorf("%s: variable %s of type %s: the check knows query and datasource variables", d.Title, v.Name, v.Type)
		}
		var next []grafanaVars
		for _, vars := range sels {
			def, err := vars.substitute(v.Definition)
			if err != nil {
				return nil, fmt.Errorf("%s: variable %s: %w", d.Title, v.Name, err)
			}
			values, err := p.labelValues(def, r)
			if err != nil {
				return nil, fmt.Errorf("%s: variable %s (%s): %w", d.Title, v.Name, def, err)
			}
			if len(values) == 0 {
				return nil, fmt.Errorf("%s: variable %s (%s) has no values", d.Title, v.Name, def)
			}
			cur := fmt.Sprint(v.Current.Value)
			c, ok := chosen[v.Name]
			if ok {
				if c != allSelection && !slices.Contains(values, c) {
					return nil, fmt.Errorf("%s: variable %s (%s): %q is not among its values %v", d.Title, v.Name, def, c, values)
				}
				cur = c
			}
			var picks []string
			switch {
			case v.IncludeAll && (cur == allSelection || cur == "All"):
				picks = []string{cmpOr(v.AllValue, strings.Join(values, "|"))}
			case slices.Contains(values, cur):
				picks = []string{cur}
			default:
				picks = []string{values[0]} // Grafana's fallback
			}
			if each && !ok && !v.IncludeAll {
				for _, val := range values {
					if val != picks[0] {
						picks = append(picks, val)
					}
				}
			}
			for _, pick := range picks {
				sel := maps.Clone(vars)
				sel[v.Name] = pick
				next = append(next, sel)
			}
		}
		sels = next
	}
	return sels, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// emptyPanels runs every panel query of ds over r, with the variables in
// chosen selected as given and the others as the dashboard's default (a
// variable without an All option at each of its values, see selections),
// and returns the queries that return no data for any selection, written
// with the default selection, and how many queries ran. A query or
// variable that fails fails t.
func (p *prometheusServer) emptyPanels(t *testing.T, ds []grafanaDashboard, r promv1.Range, chosen grafanaVars) (empty []panelQuery, checked int) {
	t.Helper()
	for _, d := range ds {
		sels, err := p.selections(d, r, chosen, true)
		if err != nil {
			t.Error(err)
			continue
		}
	queries:
		for _, q := range d.queries() {
			checked++
			try := sels
			if embeddedOnly(q.expr) || serversJoined(q.expr) {
				try = sels[:1] // allowed to be empty: one run checks the query
			}
			var first string
			for i, vars := range try {
				expr, err := vars.substitute(q.expr)
				if err != nil {
					t.Errorf("%s: %v", q.where, err)
					continue queries
				}
				if i == 0 {
					first = expr
				}
				ok, err := p.hasData(expr, r)
				if err != nil {
					t.Errorf("%s: %s: %v", q.where, expr, err)
					continue queries
				}
				if ok {
					continue queries
				}
			}
			if !embeddedOnly(first) && !serversJoined(first) {
				where := q.where
				if len(sels) > 1 {
					where += fmt.Sprintf(" (at each of %d selections)", len(sels))
				}
				empty = append(empty, panelQuery{where: where, expr: first})
			}
		}
	}
	return empty, checked
}

// serversJoined reports whether expr reads a stage rule that exists only
// where Prometheus also scrapes the API servers (the watch caches behind
// the head, the worst stage): the stacks of TestEndToEnd and TestFleet do
// not, and the dashboard row says so ("API servers joined: none"); TestHA's
// one_server_loses_etcd does, and judges the worst stage its pages name.
func serversJoined(expr string) bool {
	return strings.Contains(expr, slo.RuleWatchCacheBehind) || strings.Contains(expr, slo.RuleWorstStage)
}

// embeddedOnly reports whether expr reads what only a controller that
// embeds pkg/probe's stale-read check produces: the exporter reconciles
// nothing, so these panels stay empty beside it alone.
func embeddedOnly(expr string) bool {
	for _, m := range []catalog.Metric{catalog.StaleReadChecks, catalog.StaleReads, catalog.StaleReadBehind, catalog.ReconcileReadDelay} {
		if strings.Contains(expr, m.Name) {
			return true
		}
	}
	return strings.Contains(expr, fmt.Sprintf("%s=%q", slo.LabelSLO, slo.StaleReads))
}

// labelValues evaluates Grafana's label_values(series, label) over r.
func (p *prometheusServer) labelValues(def string, r promv1.Range) ([]string, error) {
	m := labelValuesCall.FindStringSubmatch(def)
	if m == nil {
		return nil, fmt.Errorf("not a label_values() query")
	}
	ctx, cancel := apiContext()
	defer cancel()
	seen := map[string]bool{}
	if m[1] == "" {
		vals, _, _, err := p.api.LabelValues(ctx, m[2], nil, r.Start, r.End)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			seen[string(v)] = true
		}
	} else {
		series, _, _, err := p.api.Series(ctx, []string{m[1]}, r.Start, r.End)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			if v, ok := s[model.LabelName(m[2])]; ok {
				seen[string(v)] = true
			}
		}
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}
