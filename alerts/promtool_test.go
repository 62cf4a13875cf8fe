package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rvsync-slo/rvsync-slo/internal/testenv"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// promtool returns the path of promtool, failing the test when it is missing:
// these tests must not be skipped in CI.
func promtool(t *testing.T) string {
	t.Helper()
	testenv.SkipShort(t, "promtool")
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package prometheus (apt-get install prometheus)")
	}
	return p
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

// unitTestFiles are the promtool unit tests under testdata/.
func unitTestFiles(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.test.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.test.yaml: %v", err)
	}
	return files
}

// TestPromtoolUnitTests runs every testdata/*.test.yaml against the rules of
// DefaultSpec.
func TestPromtoolUnitTests(t *testing.T) {
	for _, f := range unitTestFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeRules(t, dir, slo.DefaultSpec())
			test, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), test, 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtool(t, dir, "test", "rules", filepath.Base(f))
		})
	}
}

// unitTests is the part of promtool's unit-test format the coverage test reads.
type unitTests struct {
	Tests []struct {
		Name   string `yaml:"name"`
		Alerts []struct {
			Alert  string `yaml:"alertname"`
			Expect []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		Exprs []exprTest `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// exprTest is one promql_expr_test of a group.
type exprTest struct {
	Expr   string `yaml:"expr"`
	Expect []any  `yaml:"exp_samples"`
}

// noneFired matches the check that no alert fired at any rule evaluation
// of a test group: alert_rule_test looks at chosen instants only, and an
// alert that fires and resolves between two of them would go unseen.
var noneFired = regexp.MustCompile(`^max_over_time\(ALERTS\{alertstate="firing"\}\[[0-9a-z]+\]\)$`)

// TestUnitTestsCoverEveryAlert requires, for every alert, a case where it
// fires, and in each group of silent.test.yaml (healthy, quiet resource
// sawtooth, short blip) a silent check of every alert and the check that
// none fired in between.
func TestUnitTestsCoverEveryAlert(t *testing.T) {
	fires := map[string]bool{}
	var silentGroups []string
	for _, f := range unitTestFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var u unitTests
		if err := yaml.Unmarshal(b, &u); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range u.Tests {
			if g.Name == "" {
				t.Errorf("%s: a test group has no descriptive name", f)
			}
			silent := map[string]bool{}
			for _, a := range g.Alerts {
				if len(a.Expect) > 0 {
					fires[a.Alert] = true
				} else {
					silent[a.Alert] = true
				}
			}
			if filepath.Base(f) != "silent.test.yaml" {
				continue
			}
			silentGroups = append(silentGroups, g.Name)
			for _, a := range AlertNames() {
				if !silent[a] {
					t.Errorf("%s, group %q: no check that %s stays silent", f, g.Name, a)
				}
			}
			if !slices.ContainsFunc(g.Exprs, func(e exprTest) bool { return noneFired.MatchString(e.Expr) && len(e.Expect) == 0 }) {
				t.Errorf("%s, group %q: no check that no alert fired at any evaluation (%s with no samples)", f, g.Name, noneFired)
			}
		}
	}
	for _, a := range AlertNames() {
		if !fires[a] {
			t.Errorf("no promtool unit test where %s fires", a)
		}
	}
	for _, scenario := range []string{"healthy", "sawtooth", "blip"} {
		if !slices.ContainsFunc(silentGroups, func(g string) bool { return strings.Contains(g, scenario) }) {
			t.Errorf("silent.test.yaml has no %s group", scenario)
		}
	}
}
