//go:build integration

package main

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// slothGaugeTest is a promtool unit test of sloth's rules for a gauge SLI:
// a resource lagging all along burns at ratio 1, a healthy one records 0
// rather than nothing, each per resource. (Ratios in between differ by a
// step between Prometheus 2, whose subquery ranges are closed, and 3.)
const slothGaugeTest = `rule_files: [sloth.rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: rvsync_resource_version_lag{resource="lagging"}
        values: 1000x15
      - series: rvsync_resource_version_lag{resource="healthy"}
        values: 0x15
    promql_expr_test:
      - expr: slo:sli_error:ratio_rate5m{sloth_slo="rv-lag"}
        eval_time: 10m
        exp_samples:
          - labels: slo:sli_error:ratio_rate5m{resource="lagging", sloth_id="rvsync-slo-rv-lag", sloth_service="rvsync-slo", sloth_slo="rv-lag", sloth_window="5m"}
            value: 1
          - labels: slo:sli_error:ratio_rate5m{resource="healthy", sloth_id="rvsync-slo-rv-lag", sloth_service="rvsync-slo", sloth_slo="rv-lag", sloth_window="5m"}
            value: 0
`

// TestSlothRules runs the sloth binary (RVSYNC_SLOTH: make sloth builds it
// and the Makefile exports its path) on the default Spec's sloth spec and
// checks the rules as Prometheus will load them.
func TestSlothRules(t *testing.T) {
	promtool := testenv.Command(t, "promtool", "prometheus")
	sloth, err := process.Binary("RVSYNC_SLOTH", "sloth-*/sloth")
	if err != nil {
		t.Fatalf("%v (make sloth builds it)", err)
	}
	spec, err := slothSpec(slo.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := slothRules(context.Background(), sloth, spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "gauges.test.yaml"), []byte(slothGaugeTest), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "gauges.test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := chart.ParseRules(b)
	if err != nil {
		t.Fatal(err)
	}
	rules := 0
	aggregations := map[string]int{} // by sloth_slo, in SLI recording rules
	slos := map[string]bool{}        // sloth_slo of the recording rules
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Record != "" { // sloth's alerts carry the SLO in their expression
				slos[r.Labels["sloth_slo"]] = true
			}
			if !strings.HasPrefix(r.Record, "slo:sli_error:") {
				continue
			}
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Record, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if a, ok := n.(*parser.AggregateExpr); ok {
					aggregations[r.Labels["sloth_slo"]]++
					if a.Without || !slices.Contains(a.Grouping, "resource") {
						t.Errorf("%s of %s: %s drops the resource label", r.Record, r.Labels["sloth_slo"], a)
					}
				}
				return nil
			})
		}
	}
	if got := slices.Sorted(maps.Keys(slos)); !slices.Equal(got, slices.Sorted(slices.Values(slothSLOs))) {
		t.Errorf("rules for SLOs %v, want %v", got, slothSLOs)
	}
	for _, name := range slothSLOs {
		if aggregations[name] == 0 {
			t.Errorf("%s: no SLI recording rule aggregates by resource", name)
		}
	}
	t.Logf("sloth generated %d rules in %d groups for %d SLOs", rules, len(groups.Groups), len(slos))
}
