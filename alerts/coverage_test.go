package alerts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// unitTestFiles are the promtool unit tests under testdata/.
func unitTestFiles(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.test.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.test.yaml: %v", err)
	}
	return files
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
