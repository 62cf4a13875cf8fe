package alerts

import (
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// alertsSeries is the series Prometheus writes for every alert, labelled
// with its alertname.
const alertsSeries = "ALERTS"

// selector is the part of a vector selector that says which rules' series
// it can read: the metric name and the label matchers.
type selector struct {
	name     string
	matchers []*labels.Matcher
}

// alertSelector selects the series of the alert named alert.
func alertSelector(alert string) selector {
	return selector{alertsSeries, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "alertname", alert)}}
}

// walk parses expr and calls f on each node.
func walk(expr string, f func(parser.Node)) error {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return err
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error { f(n); return nil })
	return nil
}

// reads returns the selectors of expr.
func reads(expr string) ([]selector, error) {
	var sels []selector
	err := walk(expr, func(n parser.Node) {
		if vs, ok := n.(*parser.VectorSelector); ok {
			sels = append(sels, selector{vs.Name, vs.LabelMatchers})
		}
	})
	return sels, err
}

// selects reports whether s can read a series rule r writes: the names agree
// and no matcher rejects a label the rule sets.
func (s selector) selects(r rulefmt.Rule) bool {
	name, static := r.Record, maps.Clone(r.Labels)
	if r.Alert != "" {
		name = alertsSeries
		if static == nil {
			static = map[string]string{}
		}
		static["alertname"] = r.Alert
	}
	if name != s.name {
		return false
	}
	for _, m := range s.matchers {
		if v, ok := static[m.Name]; ok && !m.Matches(v) {
			return false
		}
	}
	return true
}

// groupsFor returns the groups, in their order, that the selected series
// depend on: each group with a rule that writes one of them, then each
// group with a rule writing a series an included group reads, to a fixed
// point. A group runs the same whatever other groups a file holds (groups
// share nothing but recorded series and ALERTS), so the unit tests of one
// SLO's alerts need not evaluate every other SLO's rules at every step.
func groupsFor(groups []rulefmt.RuleGroup, sels []selector) ([]rulefmt.RuleGroup, error) {
	included := make([]bool, len(groups))
	todo := slices.Clone(sels)
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for i, g := range groups {
			if included[i] || !slices.ContainsFunc(g.Rules, s.selects) {
				continue
			}
			included[i] = true
			for _, r := range g.Rules {
				rs, err := reads(r.Expr)
				if err != nil {
					return nil, err
				}
				todo = append(todo, rs...)
			}
		}
	}
	var out []rulefmt.RuleGroup
	for i, g := range groups {
		if included[i] {
			out = append(out, g)
		}
	}
	return out, nil
}

func groupNames(groups []rulefmt.RuleGroup) []string {
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	return names
}

func TestGroupsForFollowsRecordedSeries(t *testing.T) {
	all, err := Generate(slo.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, alert := range AlertNames() {
		got, err := groupsFor(all.Groups, []selector{alertSelector(alert)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Errorf("%s: no group defines it", alert)
			continue
		}
		// Every rule of every group that an included rule can read is
		// included.
		for _, g := range got {
			for _, r := range g.Rules {
				rs, _ := reads(r.Expr)
				for _, s := range rs {
					for _, h := range all.Groups {
						if slices.ContainsFunc(h.Rules, s.selects) && !slices.Contains(groupNames(got), h.Name) {
							t.Errorf("%s: %s%s in %s reads %s, written by %s, left out", alert, r.Record, r.Alert, g.Name, s.name, h.Name)
						}
					}
				}
			}
		}
	}
	// A burn-rate page needs its own SLO's groups, not every SLO's.
	got, err := groupsFor(all.Groups, []selector{alertSelector("RvsyncListLatencyBudgetBurn")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rvsync-slo-list-latency"}; !slices.Equal(groupNames(got), want) {
		t.Errorf("RvsyncListLatencyBudgetBurn depends on %v, want %v", groupNames(got), want)
	}
	// ALERTS with no alertname depends on every alerting rule.
	got, err = groupsFor(all.Groups, []selector{{name: alertsSeries}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all.Groups {
		alerting := slices.ContainsFunc(g.Rules, func(r rulefmt.Rule) bool { return r.Alert != "" })
		if alerting && !slices.Contains(groupNames(got), g.Name) {
			t.Errorf("ALERTS: alerting group %s left out", g.Name)
		}
	}
}
