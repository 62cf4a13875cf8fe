package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Sloth's side of the benchmark: the three SLOs that both rule sets cover,
// written as a sloth prometheus/v1 spec and turned into rules by the sloth
// binary of the tool cache (make sloth), so that one Prometheus evaluates
// both on the same series, objectives and windows.

// slothService is the spec's service: the sloth_service label of its rules.
const slothService = "rvsync-slo"

// slothSLOs are the SLOs sloth's rules cover, in the spec's order. Canary
// delivery and stale reads are left out: the benchmark's history has no
// canary or stale-read series.
var slothSLOs = []string{slo.RVLag, slo.ListLatency, slo.CacheStaleness}

// slothWindowVar is the placeholder sloth replaces by each window.
const slothWindowVar = "{{.window}}"

// The prometheus/v1 spec (github.com/slok/sloth/pkg/prometheus/api/v1),
// the fields used here. Its types are repeated rather than imported so that
// sloth's dependencies stay in hack/tools/sloth.
type (
	slothSpecFile struct {
		Version string     `json:"version"`
		Service string     `json:"service"`
		SLOs    []slothSLO `json:"slos"`
	}
	slothSLO struct {
		Name        string        `json:"name"`
		Description string        `json:"description,omitempty"`
		Objective   float64       `json:"objective"` // percent, (0, 100]
		SLI         slothSLI      `json:"sli"`
		Alerting    slothAlerting `json:"alerting"`
	}
	slothSLI struct {
		Events slothEvents `json:"events"`
	}
	slothEvents struct {
		ErrorQuery string `json:"error_query"`
		TotalQuery string `json:"total_query"`
	}
	slothAlerting struct {
		Name        string     `json:"name"`
		PageAlert   slothAlert `json:"page_alert"`
		TicketAlert slothAlert `json:"ticket_alert"`
	}
	slothAlert struct {
		Labels map[string]string `json:"labels,omitempty"`
	}
)

// slothWindow is one row of sloth's AlertWindows: alert when the error
// ratio over both windows would spend BudgetPercent of the period's budget
// within the long window.
type slothWindow struct {
	Severity      string // slo.SeverityPage or slo.SeverityTicket
	Long, Short   string
	BudgetPercent float64
}

// slothPeriod and slothWindows are the windows sloth v0.16 uses by default
// (--default-slo-period 30d: its internal/alert/windows/google-30d.yaml,
// the SRE workbook's). As burn-rate factors (BudgetPercent/100 × 30d /
// Long) they are 14.4, 6, 3 and 1: DefaultSpec's table exactly, so the
// benchmark runs sloth at its defaults. A sloth spec holds no window table
// (another one takes a windows catalog directory, --slo-period-windows-path,
// which slothRules does not pass), so slothSpec refuses a Spec whose table
// differs rather than compare rules over different windows.
const slothPeriod = "30d"

var slothWindows = []slothWindow{
	{Severity: slo.SeverityPage, Long: "1h", Short: "5m", BudgetPercent: 2},
	{Severity: slo.SeverityPage, Long: "6h", Short: "30m", BudgetPercent: 5},
	{Severity: slo.SeverityTicket, Long: "1d", Short: "2h", BudgetPercent: 10},
	{Severity: slo.SeverityTicket, Long: "3d", Short: "6h", BudgetPercent: 10},
}

// slothSpec returns a sloth prometheus/v1 spec of s's RV-lag, List-latency
// and cache-staleness SLOs: each with s's objective and threshold, on the
// series s selects (s.Selector), grouped as the project's rules (s.By():
// the cluster label and resource), so that sloth's recording rules and
// alerts are per resource as ours. It fails when s is invalid, lacks or
// disables one of the three, or has a window table or budget period other
// than sloth's default (slothWindows).
func slothSpec(s slo.Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.WithDefaults()
	if err := sameWindows(s); err != nil {
		return nil, err
	}
	spec := slothSpecFile{Version: "prometheus/v1", Service: slothService}
	for _, name := range slothSLOs {
		o, err := s.SLO(name)
		if err != nil {
			return nil, err
		}
		if o.Disabled {
			return nil, fmt.Errorf("SLO %s is disabled: sloth's side needs all of %v", name, slothSLOs)
		}
		d, _ := slo.SLIOf(name)
		events, err := slothEventsOf(s, o, d)
		if err != nil {
			return nil, err
		}
		spec.SLOs = append(spec.SLOs, slothSLO{
			Name:        name,
			Description: d.Title,
			Objective:   math.Round(o.Objective*100*1e9) / 1e9, // 0.95 → 95, not 95.00000000000001
			SLI:         slothSLI{Events: events},
			Alerting: slothAlerting{
				// not ours: both rule sets load into one Prometheus
				Name:        "Sloth" + slo.BurnAlertName(name),
				PageAlert:   slothAlert{Labels: map[string]string{slo.LabelSeverity: s.SeverityLabel(slo.SeverityPage)}},
				TicketAlert: slothAlert{Labels: map[string]string{slo.LabelSeverity: s.SeverityLabel(slo.SeverityTicket)}},
			},
		})
	}
	out, err := yaml.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated by cmd/rvsync-bench-prometheus (sloth.go) from slo.Spec: sloth's input, not rvsync-slo's rules.\n"), out...), nil
}

// slothEventsOf writes the SLI of o as sloth's bad and total events per
// window.
//
// An event ratio (List latency) is sloth's native SLI: bad events are all
// events less the good ones, from the same histogram series and matchers
// as ours (d.Good, d.GoodMatchers, d.Totals).
//
// A time slice (RV lag, cache staleness) has no events; sloth sees only
// event ratios, so its users count gauge samples, as sloth's own
// examples/home-wifi.yml does: the bad ones (signal above the threshold)
// over all, at each subquery step in the window. `> bool` records 0 bad
// for a healthy resource (home-wifi's `or on() vector(0)`, per resource),
// so every resource has a ratio as in our rules; both counts are
// subqueries, so they count the same steps whatever the scrape interval.
// The semantics differ from ours, which is the point of neither rule set
// but of the benchmark's cost comparison on the same series: ours judges
// the signal's minimum over s.SliceWindow, so a quiet resource's bookmark
// sawtooth never counts, and staleness less the freshness-proof allowance
// (d.Allowance); sloth's formulation judges each sample and no allowance.
func slothEventsOf(s slo.Spec, o slo.SLO, d slo.SLI) (slothEvents, error) {
	threshold := promql.Num(o.Threshold)
	switch {
	case d.Kind == slo.TimeSlice:
		signal := s.Series(d.Signal.Name)
		return slothEvents{
			ErrorQuery: fmt.Sprintf("sum_over_time((sum %s (%s > bool %s))[%s:])", s.By(), signal, threshold, slothWindowVar),
			TotalQuery: fmt.Sprintf("sum_over_time((count %s (%s))[%s:])", s.By(), signal, slothWindowVar),
		}, nil
	case d.Kind == slo.EventRatio && d.Thresholded():
		var totals []string
		for _, t := range d.Totals {
			totals = append(totals, slothSumRate(s, t.Name, t.Matchers...))
		}
		total := strings.Join(totals, " + ")
		good := slothSumRate(s, d.Good.Name+"_bucket", append(d.GoodMatchers, promql.Le(o.Threshold))...)
		return slothEvents{ErrorQuery: fmt.Sprintf("(%s) - (%s)", total, good), TotalQuery: total}, nil
	}
	return slothEvents{}, fmt.Errorf("SLO %s: sloth's side writes thresholded event ratios and time slices, not a %s SLI that counts bad events", o.Name, d.Kind)
}

// slothSumRate sums a series' per-second rate over sloth's window, grouped
// as the project's rules.
func slothSumRate(s slo.Spec, name string, matchers ...string) string {
	return fmt.Sprintf("sum %s (rate(%s[%s]))", s.By(), s.Series(name, matchers...), slothWindowVar)
}

// sameWindows reports how s's budget period and burn-rate table (defaults
// filled) differ from sloth's default ones, nil when they are the same.
func sameWindows(s slo.Spec) error {
	var errs []error
	if s.BudgetPeriod != slothPeriod {
		errs = append(errs, fmt.Errorf("budget period %s, sloth's is %s", s.BudgetPeriod, slothPeriod))
	}
	if s.WindowScale != 1 {
		errs = append(errs, fmt.Errorf("window scale %v, sloth's windows are not scaled", s.WindowScale))
	}
	period := durationOf(slothPeriod)
	var want []slo.BurnWindow
	for _, w := range slothWindows {
		factor := w.BudgetPercent / 100 * float64(period) / float64(durationOf(w.Long))
		want = append(want, slo.BurnWindow{Long: w.Long, Short: w.Short, Factor: factor, Severity: w.Severity})
	}
	if !sameBurnWindows(s.Windows, want) {
		errs = append(errs, fmt.Errorf("burn-rate windows %v, sloth's are %v", s.Windows, want))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sloth v0.16's rules use the SRE workbook's 30d windows only: %w", err)
	}
	return nil
}

// sameBurnWindows reports whether a and b hold the same rows in any order,
// factors equal to rounding.
func sameBurnWindows(a, b []slo.BurnWindow) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
next:
	for _, x := range a {
		for i, y := range b {
			if !used[i] && durationOf(x.Long) == durationOf(y.Long) && durationOf(x.Short) == durationOf(y.Short) &&
				x.Severity == y.Severity && math.Abs(x.Factor-y.Factor) < 1e-9 {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}

// durationOf parses a Prometheus duration that Validate checked or that
// slothWindows holds.
func durationOf(d string) time.Duration {
	v, _ := model.ParseDuration(d)
	return time.Duration(v)
}

// slothRules writes spec (slothSpec's) into dir and has the sloth binary
// generate its Prometheus rules there, returning the rules file's path.
// Sloth's flags: generate with its defaults (30d period, its Google
// windows), --no-log so its stderr holds only what went wrong.
func slothRules(ctx context.Context, slothBin string, spec []byte, dir string) (rulesPath string, err error) {
	in := filepath.Join(dir, "sloth-spec.yaml")
	if err := os.WriteFile(in, spec, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "sloth.rules.yaml")
	cmd := exec.CommandContext(ctx, slothBin, "--no-log", "generate", "--default-slo-period", slothPeriod, "-i", in, "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
