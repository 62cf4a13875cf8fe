package alerts

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// customSpec is a non-default spec: other selector, cluster label, labels,
// objectives and a disabled SLO.
func customSpec() slo.Spec {
	s := slo.DefaultSpec()
	s.Selector = `job="my-operator"`
	s.ClusterLabel = "k8s_cluster"
	s.ExtraLabels = map[string]string{"team": "platform"}
	s.SLOs[0].Objective = 0.99
	s.SLOs[0].Threshold = 1
	s.SLOs[1].Disabled = true
	return s
}

// rules returns every rule of spec's groups.
func rules(t *testing.T, spec slo.Spec) []rulefmt.Rule {
	t.Helper()
	groups, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	var rs []rulefmt.Rule
	for _, g := range groups.Groups {
		rs = append(rs, g.Rules...)
	}
	return rs
}

// inspect parses a rule's expression and calls f on each node.
func inspect(t *testing.T, r rulefmt.Rule, f func(parser.Node)) {
	t.Helper()
	if err := walk(r.Expr, f); err != nil {
		t.Fatalf("%s%s: %v", r.Record, r.Alert, err)
	}
}

func TestExpressionsUseOnlyKnownSeries(t *testing.T) {
	for _, spec := range []slo.Spec{slo.DefaultSpec(), customSpec()} {
		recorded := spec.RecordingRules()
		for _, r := range rules(t, spec) {
			inspect(t, r, func(n parser.Node) {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return
				}
				_, raw := catalog.Lookup(vs.Name)
				if !raw && !slices.Contains(recorded, vs.Name) && !slices.Contains(slo.APIServerSeries(), vs.Name) && vs.Name != "up" && vs.Name != "ALERTS" {
					t.Errorf("%s%s uses %q, which is neither a catalog series, an API server series of the stage rules nor a recording rule of the spec", r.Record, r.Alert, vs.Name)
				}
			})
			if r.Record != "" && !slices.Contains(recorded, r.Record) {
				t.Errorf("recording rule %q is not in Spec.RecordingRules()", r.Record)
			}
		}
	}
}

func TestSelectorAndClusterLabelAppearEverywhere(t *testing.T) {
	spec := customSpec()
	want := &labels.Matcher{Type: labels.MatchEqual, Name: "job", Value: "my-operator"}
	for _, r := range rules(t, spec) {
		name := r.Record + r.Alert
		inspect(t, r, func(n parser.Node) {
			switch n := n.(type) {
			case *parser.VectorSelector:
				if _, raw := catalog.Lookup(n.Name); (raw || n.Name == "up") && !slices.ContainsFunc(n.LabelMatchers, func(m *labels.Matcher) bool { return m.String() == want.String() }) {
					t.Errorf("%s: selector %s lacks %s", name, n, want)
				}
			case *parser.AggregateExpr:
				if n.Without || !slices.Contains(n.Grouping, "k8s_cluster") || !slices.Contains(n.Grouping, catalog.LabelResource) {
					t.Errorf("%s: aggregation %s drops the cluster label or resource", name, n)
				}
				if slices.Contains(n.Grouping, "cluster") {
					t.Errorf("%s: aggregation %s uses the default cluster label", name, n)
				}
			}
		})
		if r.Alert == "" {
			continue
		}
		if r.Labels["team"] != "platform" {
			t.Errorf("%s: extra label team missing: %v", name, r.Labels)
		}
		if d := r.Annotations[annotationDescription]; strings.Contains(d, "$labels.resource") && !strings.Contains(d, "$labels.k8s_cluster") {
			t.Errorf("%s: description names the resource but not the cluster: %s", name, d)
		}
	}
}

func TestEveryAlertIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range rules(t, slo.DefaultSpec()) {
		if r.Alert == "" {
			continue
		}
		seen[r.Alert] = true
		if !slices.Contains([]string{slo.DefaultSeverityPage, slo.DefaultSeverityTicket}, r.Labels[slo.LabelSeverity]) {
			t.Errorf("%s: severity %q", r.Alert, r.Labels[slo.LabelSeverity])
		}
		for _, a := range []string{annotationSummary, annotationDescription} {
			if r.Annotations[a] == "" {
				t.Errorf("%s: no %s", r.Alert, a)
			}
		}
		if got, want := r.Annotations[annotationRunbookURL], slo.DefaultRunbookURLPrefix+strings.ToLower(r.Alert); got != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
		}
		// The exporter alerts' value is a constant 0 or 1 and says nothing.
		if r.Alert != AlertExporterAbsent && r.Alert != AlertExporterDown && !strings.Contains(r.Annotations[annotationDescription], "{{ $value") {
			t.Errorf("%s: description does not show the value", r.Alert)
		}
	}
	for _, a := range AlertNames() {
		if !seen[a] {
			t.Errorf("AlertNames lists %s, which DefaultSpec does not generate", a)
		}
		delete(seen, a)
	}
	if len(seen) > 0 {
		t.Errorf("alerts missing from AlertNames: %v", seen)
	}
}

// TestRunbookAnchorsExist checks that docs/runbooks.md has a section for the
// anchor of every alert's runbook_url.
func TestRunbookAnchorsExist(t *testing.T) {
	md, err := os.ReadFile("../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(string(md), -1) {
		anchors[githubAnchor(m[1])] = true
	}
	for _, r := range rules(t, slo.DefaultSpec()) {
		if r.Alert == "" {
			continue
		}
		anchor := strings.TrimPrefix(r.Annotations[annotationRunbookURL], slo.DefaultRunbookURLPrefix)
		if !anchors[anchor] {
			t.Errorf("%s: docs/runbooks.md has no section with anchor #%s", r.Alert, anchor)
		}
	}
}

// githubAnchor is GitHub's heading anchor: lower case, spaces to dashes,
// punctuation dropped.
func githubAnchor(heading string) string {
	a := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(heading)), " ", "-")
	return regexp.MustCompile(`[^a-z0-9_-]`).ReplaceAllString(a, "")
}

func TestRenderParsesWithRulefmtAndIsDeterministic(t *testing.T) {
	for _, spec := range []slo.Spec{slo.DefaultSpec(), customSpec(), {}} {
		out, err := Render(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out, []byte(Header)) {
			t.Errorf("output does not start with %q", Header)
		}
		if _, errs := rulefmt.Parse(out, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler)); len(errs) > 0 {
			t.Errorf("rulefmt.Parse: %v", errs)
		}
		again, _ := Render(spec)
		if !bytes.Equal(out, again) {
			t.Error("two renders of the same spec differ")
		}
	}
}

func TestZeroSpecRendersLikeDefault(t *testing.T) {
	zero, err := Render(slo.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := Render(slo.DefaultSpec())
	if !bytes.Equal(zero, def) {
		t.Error("Render(Spec{}) differs from Render(DefaultSpec())")
	}
}

func TestScaledWindowsScaleRangesButNotNames(t *testing.T) {
	out, err := Render(slo.DefaultSpec().ScaledWindows(1.0 / 60))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"record: " + slo.ErrorRatioRule("1h"),
		`[1m]`,  // 1h
		`[12h]`, // 30d
		"long_window: 1h",
		"[2m]", // the slice window follows the bookmark period, unscaled
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("scaled rules lack %q", want)
		}
	}
	if strings.Contains(string(out), "[30d]") {
		t.Error("scaled rules still read 30 days")
	}
}

// TestGenerateRejectsInvalidSpecs: the generator validates before it
// renders (slo's tests cover each rule of Validate).
func TestGenerateRejectsInvalidSpecs(t *testing.T) {
	s := slo.DefaultSpec()
	s.SLOs[0].Objective = 1
	if _, err := Generate(s); err == nil || !strings.Contains(err.Error(), "objective 1 must be in (0, 1)") {
		t.Errorf("Generate(invalid) = %v", err)
	}
	s = slo.DefaultSpec()
	s.Windows[0].Long = "4h"
	if _, err := Generate(s); err != nil {
		t.Errorf("Generate with a 4h window: %v", err)
	}
}

// TestOnlyTheBudgetGroupsReadTheBudgetPeriod pins what keeps the rules cheap
// on the user's Prometheus (make bench-prometheus measures it): no rule of
// the groups evaluated every interval reads more than the longest burn-rate
// window; the budget period is read only by each SLO's budget group, every
// slo.BudgetInterval (at most half the 5m lookback, so dashboards' instant
// queries always find a sample), and only from the sampled ratio recorded
// just before it in that group.
func TestOnlyTheBudgetGroupsReadTheBudgetPeriod(t *testing.T) {
	spec := slo.DefaultSpec()
	groups, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	longest := time.Duration(0)
	for _, w := range spec.Windows {
		longest = max(longest, time.Duration(model.Duration(mustParse(t, w.Long))))
	}
	budgets := 0
	for _, g := range groups.Groups {
		budget := strings.HasSuffix(g.Name, "-budget")
		if budget {
			budgets++
			if time.Duration(g.Interval) <= 0 || time.Duration(g.Interval) > 150*time.Second {
				t.Errorf("group %s: interval %s, want set and at most half of the 5m lookback", g.Name, g.Interval)
			}
		}
		for i, r := range g.Rules {
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				m, ok := n.(*parser.MatrixSelector)
				if !ok || m.Range <= longest {
					return nil
				}
				name := m.VectorSelector.(*parser.VectorSelector).Name
				switch {
				case !budget:
					t.Errorf("group %s, %s%s reads %s of %s: only budget groups may read beyond %s", g.Name, r.Record, r.Alert, m.Range, name, longest)
				case i == 0 || g.Rules[i-1].Record != name || !strings.HasPrefix(name, slo.RuleErrorRatioSampled):
					t.Errorf("group %s, %s reads %s of %s, want the sampled ratio recorded just before it", g.Name, r.Record, m.Range, name)
				}
				return nil
			})
		}
	}
	if budgets != len(spec.SLOs) {
		t.Errorf("%d budget groups, want one per SLO (%d)", budgets, len(spec.SLOs))
	}
	// scaled windows (the end-to-end tests' minutes for hours) scale it too
	scaled, err := Generate(spec.ScaledWindows(1.0 / 60))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range scaled.Groups {
		if strings.HasSuffix(g.Name, "-budget") && time.Duration(g.Interval) != 3*time.Second {
			t.Errorf("scaled 1/60: group %s interval %s, want 3s (2m30s/60, rounded)", g.Name, g.Interval)
		}
	}
}

func mustParse(t *testing.T, d string) model.Duration {
	t.Helper()
	v, err := model.ParseDuration(d)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStageRulesReadTheAPIServersJob: every API server series the stage
// rules read carries Spec.APIServerJob, so a Prometheus that scrapes the
// API servers under another job name joins them with one setting.
func TestStageRulesReadTheAPIServersJob(t *testing.T) {
	spec := customSpec()
	spec.APIServerJob = "kubernetes-apiservers"
	want := &labels.Matcher{Type: labels.MatchEqual, Name: "job", Value: spec.APIServerJob}
	read := map[string]bool{}
	for _, r := range rules(t, spec) {
		inspect(t, r, func(n parser.Node) {
			vs, ok := n.(*parser.VectorSelector)
			if !ok || !slices.Contains(slo.APIServerSeries(), vs.Name) {
				return
			}
			read[vs.Name] = true
			if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.String() == want.String() }) {
				t.Errorf("%s%s: selector %s lacks %s", r.Record, r.Alert, vs, want)
			}
		})
	}
	for _, name := range slo.APIServerSeries() {
		if !read[name] {
			t.Errorf("no stage rule reads %s", name)
		}
	}
}

// TestEveryResourceAlertSaysWhere: every alert about a resource ends its
// description with the worst stage's query, and the alerts about the
// exporter itself (no resource, no stage) do not.
func TestEveryResourceAlertSaysWhere(t *testing.T) {
	for _, r := range rules(t, slo.DefaultSpec()) {
		if r.Alert == "" {
			continue
		}
		exporter := r.Alert == AlertExporterDown || r.Alert == AlertExporterAbsent
		says := strings.Contains(r.Annotations[annotationDescription], slo.RuleWorstStage)
		if says == exporter {
			t.Errorf("%s: description queries %s: %v, want %v", r.Alert, slo.RuleWorstStage, says, !exporter)
		}
	}
}
