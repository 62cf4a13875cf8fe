package alerts

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
)

// customSpec is a non-default spec: other selector, cluster label, labels,
// objectives and a disabled SLO.
func customSpec() Spec {
	s := DefaultSpec()
	s.Selector = `job="my-operator"`
	s.ClusterLabel = "k8s_cluster"
	s.ExtraLabels = map[string]string{"team": "platform"}
	s.SLOs[0].Objective = 0.99
	s.SLOs[0].Threshold = 1
	s.SLOs[1].Disabled = true
	return s
}

// rules returns every rule of spec's groups.
func rules(t *testing.T, spec Spec) []rulefmt.Rule {
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
	e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
	if err != nil {
		t.Fatalf("%s%s: %v", r.Record, r.Alert, err)
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error { f(n); return nil })
}

func TestExpressionsUseOnlyKnownSeries(t *testing.T) {
	for _, spec := range []Spec{DefaultSpec(), customSpec()} {
		for _, r := range rules(t, spec) {
			inspect(t, r, func(n parser.Node) {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return
				}
				_, raw := catalog.Lookup(vs.Name)
				if !raw && !slices.Contains(catalog.RecordingRules(), vs.Name) && vs.Name != "up" && vs.Name != "ALERTS" {
					t.Errorf("%s%s uses %q, which is neither a catalog series nor a catalog recording rule", r.Record, r.Alert, vs.Name)
				}
			})
			if r.Record != "" && !slices.Contains(catalog.RecordingRules(), r.Record) {
				t.Errorf("recording rule %q is not in catalog.RecordingRules()", r.Record)
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
	for _, r := range rules(t, DefaultSpec()) {
		if r.Alert == "" {
			continue
		}
		seen[r.Alert] = true
		if !slices.Contains(Severities(), r.Labels[labelSeverity]) {
			t.Errorf("%s: severity %q", r.Alert, r.Labels[labelSeverity])
		}
		for _, a := range []string{annotationSummary, annotationDescription} {
			if r.Annotations[a] == "" {
				t.Errorf("%s: no %s", r.Alert, a)
			}
		}
		if got, want := r.Annotations[annotationRunbookURL], DefaultRunbookURLPrefix+strings.ToLower(r.Alert); got != want {
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
	for _, r := range rules(t, DefaultSpec()) {
		if r.Alert == "" {
			continue
		}
		anchor := strings.TrimPrefix(r.Annotations[annotationRunbookURL], DefaultRunbookURLPrefix)
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
	for _, spec := range []Spec{DefaultSpec(), customSpec(), {}} {
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
	zero, err := Render(Spec{})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := Render(DefaultSpec())
	if !bytes.Equal(zero, def) {
		t.Error("Render(Spec{}) differs from Render(DefaultSpec())")
	}
}

func TestScaledWindowsScaleRangesButNotNames(t *testing.T) {
	out, err := Render(DefaultSpec().ScaledWindows(1.0 / 60))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"record: " + catalog.SLIErrorRatio("1h"),
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

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Spec)
		want   string // substring of the error; "" for valid
	}{
		{"default is valid", func(*Spec) {}, ""},
		{"zero spec gets defaults", func(s *Spec) { *s = Spec{} }, ""},
		{"objective of 1", func(s *Spec) { s.SLOs[0].Objective = 1 }, "objective 1 must be in (0, 1)"},
		{"negative objective", func(s *Spec) { s.SLOs[2].Objective = -0.5 }, "must be in (0, 1)"},
		{"negative threshold", func(s *Spec) { s.SLOs[3].Threshold = -1 }, "threshold -1 must be positive"},
		{"threshold between buckets", func(s *Spec) { s.SLOs[0].Threshold = 2 }, "is not a bucket of rvsync_list_duration_seconds"},
		{"unknown SLO", func(s *Spec) { s.SLOs[0].Name = "availability" }, "unknown SLO name"},
		{"SLO twice", func(s *Spec) { s.SLOs[1] = s.SLOs[0] }, "declared twice"},
		{"wrong kind", func(s *Spec) { s.SLOs[2].Kind = EventRatio }, "is a time-slice SLI"},
		{"unparsable window", func(s *Spec) { s.Windows[0].Long = "1 hour" }, "windows[0].long"},
		{"window without rule name", func(s *Spec) { s.Windows[0].Long = "4h" }, "add it to catalog.SLOWindows"},
		{"short not shorter", func(s *Spec) { s.Windows[1].Short = "6h" }, "must be shorter"},
		{"unknown severity", func(s *Spec) { s.Windows[0].Severity = "critical" }, `severity "critical" is not one of [page ticket]`},
		{"zero factor", func(s *Spec) { s.Windows[0].Factor = -2 }, "factor -2 must be positive"},
		{"bad selector", func(s *Spec) { s.Selector = `job=rvsync` }, "selector"},
		{"bad cluster label", func(s *Spec) { s.ClusterLabel = "k8s-cluster" }, "clusterLabel"},
		{"reserved extra label", func(s *Spec) { s.ExtraLabels = map[string]string{"severity": "x"} }, "set by the generator"},
		{"slice window within bookmark period", func(s *Spec) { s.SliceWindow = "30s" }, "longer than the API server's bookmark period"},
		{"stall threshold within bookmark periods", func(s *Spec) { s.Symptoms.StalledAfterSeconds = 60 }, "several bookmark periods"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultSpec()
			c.mutate(&s)
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if _, gerr := Generate(s); (gerr == nil) != (err == nil) {
				t.Errorf("Generate error %v disagrees with Validate error %v", gerr, err)
			}
		})
	}
}
