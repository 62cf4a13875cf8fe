//go:build integration

package alerts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// promtool returns the path of promtool, failing the test when it is missing:
// these tests must not be skipped in CI.
func promtool(t *testing.T) string {
	t.Helper()
	return testenv.Command(t, "promtool", "prometheus")
}

// writeRules renders spec into dir/rvsync-slo.rules.yaml, the file the unit
// tests under testdata/ load.
func writeRules(t *testing.T, dir string, spec slo.Spec) string {
	t.Helper()
	out, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rvsync-slo.rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	for name, spec := range map[string]slo.Spec{"default": slo.DefaultSpec(), "custom": customSpec(), "scaled": slo.DefaultSpec().ScaledWindows(1.0 / 60)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			runPromtool(t, dir, "check", "rules", writeRules(t, dir, spec))
		})
	}
}

// TestPromtoolUnitTests runs every testdata/*.test.yaml against the rules of
// DefaultSpec that its alerts and expressions depend on (groupsFor): the
// burn-rate files run 36 hours of history at 1m steps, and evaluating every
// other SLO's groups at each step would triple their cost for nothing. A
// file named *.scaled.test.yaml runs against scaledSpec instead.
func TestPromtoolUnitTests(t *testing.T) {
	def, err := Generate(slo.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := Generate(scaledSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range unitTestFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			all := def
			if strings.HasSuffix(f, ".scaled.test.yaml") {
				all = scaled
			}
			test, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sels, err := selectorsTested(test)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			groups, err := groupsFor(all.Groups, sels)
			if err != nil {
				t.Fatal(err)
			}
			out, err := encodeYAML(rulefmt.RuleGroups{Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "rvsync-slo.rules.yaml"), append([]byte(Header), out...), 0o644); err != nil {
				t.Fatal(err)
			}
			test = append(test, evalOrder(groups)...)
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), test, 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtool(t, dir, "test", "rules", filepath.Base(f))
		})
	}
}

// scaledSpec is the spec of the end-to-end suites' rule file (test/e2e's
// testSpec): DefaultSpec with its burn-rate windows scaled by 1/60 (1h →
// 1m, 5m → 5s) and the symptom alerts' durations at their minimum. The
// stage rules' windows are not scaled, so a unit test of this spec shows
// what a page of the suites says, at the time it fires there.
func scaledSpec() slo.Spec {
	s := slo.DefaultSpec().ScaledWindows(1.0 / 60)
	s.Symptoms.StalledAfterSeconds = 120
	s.Symptoms.StalledFor = "5s"
	s.Symptoms.NotSyncedFor = "1m"
	s.Symptoms.ErrorsFor = "30s"
	return s
}

// evalOrder is the group_eval_order a unit-test file gets: every group
// loaded, the stage group first, so that an alert's description, whose
// template queries the worst stage, reads this evaluation's value. promtool
// evaluates the groups it is not told the order of in no fixed order (its
// sort ties them with the first listed): 1 run in 6 of stages.test.yaml
// read the value of a minute earlier ("2m 48s" for "3m 45s").
func evalOrder(groups []rulefmt.RuleGroup) string {
	var b strings.Builder
	b.WriteString("\ngroup_eval_order:\n")
	for _, first := range []bool{true, false} {
		for _, g := range groups {
			if (g.Name == stageGroupName) == first {
				fmt.Fprintf(&b, "  - %s\n", g.Name)
			}
		}
	}
	return b.String()
}

// selectorsTested returns the alerts a promtool unit-test file checks and
// the series its expressions read.
func selectorsTested(test []byte) ([]selector, error) {
	var u unitTests
	if err := yaml.Unmarshal(test, &u); err != nil {
		return nil, err
	}
	var sels []selector
	for _, g := range u.Tests {
		for _, a := range g.Alerts {
			sels = append(sels, alertSelector(a.Alert))
		}
		for _, e := range g.Exprs {
			rs, err := reads(e.Expr)
			if err != nil {
				return nil, fmt.Errorf("promql_expr_test %q: %w", e.Expr, err)
			}
			sels = append(sels, rs...)
		}
	}
	return sels, nil
}
