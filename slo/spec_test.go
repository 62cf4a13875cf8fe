package slo

import (
	"slices"
	"strings"
	"testing"
)

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
		{"threshold on the stale-reads SLO", func(s *Spec) { s.SLOs[4].Threshold = 0.5 }, "this SLO has none"},
		{"unknown SLO", func(s *Spec) { s.SLOs[0].Name = "availability" }, "unknown SLO name"},
		{"SLO twice", func(s *Spec) { s.SLOs[1] = s.SLOs[0] }, "declared twice"},
		{"wrong kind", func(s *Spec) { s.SLOs[2].Kind = EventRatio }, "is a time-slice SLI"},
		{"unparsable window", func(s *Spec) { s.Windows[0].Long = "1 hour" }, "windows[0].long"},
		{"any duration is a window", func(s *Spec) { s.Windows[0].Long = "4h" }, ""},
		{"short not shorter", func(s *Spec) { s.Windows[1].Short = "6h" }, "must be shorter"},
		{"unknown severity", func(s *Spec) { s.Windows[0].Severity = "urgent" }, `severity "urgent" is not one of`},
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
		})
	}
}

// TestDefaultThresholdsAreBuckets: an event-ratio SLO counts good events
// with an `le` select, which must hit a bucket bound exactly.
func TestDefaultThresholdsAreBuckets(t *testing.T) {
	for _, o := range DefaultSpec().SLOs {
		d, ok := SLIOf(o.Name)
		if !ok {
			t.Fatalf("%s: no SLI", o.Name)
		}
		if d.Kind == EventRatio && d.Thresholded() && !slices.Contains(d.Good.Buckets, o.Threshold) {
			t.Errorf("%s: threshold %v is not a bucket of %s %v", o.Name, o.Threshold, d.Good.Name, d.Good.Buckets)
		}
	}
}

func TestEverySLOHasAnSLI(t *testing.T) {
	for _, n := range Names() {
		if _, ok := SLIOf(n); !ok {
			t.Errorf("%s has no SLI", n)
		}
	}
	if len(slis) != len(Names()) {
		t.Errorf("%d SLIs for %d names", len(slis), len(Names()))
	}
}

func TestRecordingRulesFollowWindows(t *testing.T) {
	s := DefaultSpec()
	s.Windows[0].Long = "4h"
	names := s.RecordingRules()
	for _, want := range []string{ErrorRatioRule("4h"), ErrorRatioRule("5m"), ErrorRatioRule("30d"), RuleBadSlice} {
		if !slices.Contains(names, want) {
			t.Errorf("RecordingRules() lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, ErrorRatioRule("1h")) {
		t.Errorf("RecordingRules() keeps the replaced 1h window: %v", names)
	}
}

func TestScaled(t *testing.T) {
	s := DefaultSpec().ScaledWindows(1.0 / 60)
	for in, want := range map[string]string{"1h": "1m", "30d": "12h", "5m": "5s"} {
		if got := s.Scaled(in); got != want {
			t.Errorf("Scaled(%s) = %s, want %s", in, got, want)
		}
	}
	if got := DefaultSpec().Scaled("1h"); got != "1h" {
		t.Errorf("unscaled Scaled(1h) = %s", got)
	}
}
