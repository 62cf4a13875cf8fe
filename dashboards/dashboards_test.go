//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// customSelector is a non-default exporter selector used by several tests.
const customSelector = `job="my-operator"`

// configs are the rendered scenarios and the directories of their golden
// files: the defaults are what the chart ships (make generate writes them),
// the others live in testdata/<name>/.
var configs = []struct {
	name, dir string
	cfg       Config
}{
	{"default", "../charts/rvsync-slo/files/dashboards", Config{}},
	{"custom", "testdata/custom", Config{
		Spec: func() slo.Spec {
			s := slo.DefaultSpec()
			s.Selector = customSelector
			s.ClusterLabel = "k8s_cluster"
			s.SLOs[0].Threshold = 2.5 // list latency
			s.SLOs[1].Disabled = true // canary delivery
			return s
		}(),
		SingleCluster: true,
		UIDPrefix:     "my-",
	}},
}

func render(t *testing.T, cfg Config) map[string][]byte {
	t.Helper()
	out, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir
			out := render(t, c.cfg)
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, got := range out {
				path := filepath.Join(dir, name)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run make generate, or go test ./dashboards -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s; run make generate (or go test ./dashboards -update) and review the diff", name, path)
				}
			}
			if again := render(t, c.cfg); !mapsEqual(out, again) {
				t.Error("two renders of the same config differ")
			}
		})
	}
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestRenderFileNames(t *testing.T) {
	var names []string
	for name := range render(t, Config{}) {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"rvsync-overview.json", "rvsync-resource.json", "rvsync-slos.json"}
	if !slices.Equal(names, want) {
		t.Errorf("files = %v, want %v", names, want)
	}
}

func TestJSONRoundTripsThroughSDK(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, c := range configs {
		for name, data := range render(t, c.cfg) {
			var d dashboard.Dashboard
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatalf("%s/%s: unmarshal: %v", c.name, name, err)
			}
			again, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatalf("%s/%s: marshal: %v", c.name, name, err)
			}
			if !bytes.Equal(append(again, '\n'), data) {
				t.Errorf("%s/%s does not round-trip through dashboard.Dashboard", c.name, name)
			}
		}
	}
}

func TestStableUIDsAndUniqueIDs(t *testing.T) {
	uids := map[string]bool{}
	for name, d := range decodeAll(t, Config{}) {
		uid, _ := d["uid"].(string)
		if !strings.HasPrefix(uid, "rvsync-") || uids[uid] {
			t.Errorf("%s: uid %q not stable and unique", name, uid)
		}
		uids[uid] = true
		ids := map[float64]bool{}
		for _, p := range panels(d) {
			id, _ := p["id"].(float64)
			if id == 0 || ids[id] {
				t.Errorf("%s: panel %q has id %v, missing or repeated", name, p["title"], p["id"])
			}
			ids[id] = true
		}
	}
}

func TestEveryPanelIsDescribed(t *testing.T) {
	units := []string{unitSeconds, unitRevisions, unitObjects, unitOpsPerSec, unitPercent, unitNone}
	for _, c := range configs {
		for name, d := range decodeAll(t, c.cfg) {
			for _, p := range panels(d) {
				if p["type"] == "row" {
					continue
				}
				title, _ := p["title"].(string)
				where := c.name + "/" + name + "/" + title
				if title == "" {
					t.Errorf("%s: panel without title", where)
				}
				if desc, _ := p["description"].(string); !strings.Contains(desc, "Good") {
					t.Errorf("%s: description %q does not say what good looks like", where, desc)
				}
				unit, _ := path(p, "fieldConfig", "defaults", "unit").(string)
				if !slices.Contains(units, unit) {
					t.Errorf("%s: unit %q not one of %v", where, unit, units)
				}
				if len(targets(p)) == 0 {
					t.Errorf("%s: no queries", where)
				}
			}
		}
	}
}

func TestVariables(t *testing.T) {
	for _, c := range configs {
		for name, d := range decodeAll(t, c.cfg) {
			vars := map[string]map[string]any{}
			for _, v := range path(d, "templating", "list").([]any) {
				v := v.(map[string]any)
				vars[v["name"].(string)] = v
			}
			if vars[varDatasource]["type"] != "datasource" || vars[varDatasource]["query"] != "prometheus" {
				t.Errorf("%s/%s: no Prometheus datasource variable: %v", c.name, name, vars[varDatasource])
			}
			hidden := vars[varCluster]["hide"] == float64(dashboard.VariableHideHideVariable)
			if hidden != c.cfg.SingleCluster {
				t.Errorf("%s/%s: cluster variable hidden = %v, want %v", c.name, name, hidden, c.cfg.SingleCluster)
			}
			if vars[varResource]["multi"] != true {
				t.Errorf("%s/%s: resource variable not multi-select: %v", c.name, name, vars[varResource])
			}
			// The detail dashboard opens on one resource (the canary's; with
			// no "All", Grafana selects the query's first value when that one
			// is not among them); the others on all of them.
			one := name == FileName(uidResource)
			cur, _ := path(vars[varResource], "current", "value").(string)
			if one && (vars[varResource]["includeAll"] == true || cur != defaultResource) {
				t.Errorf("%s/%s: resource variable defaults to %q with includeAll %v, want one resource: no All, %q", c.name, name, cur, vars[varResource]["includeAll"], defaultResource)
			}
			if !one && (vars[varResource]["includeAll"] != true || cur != "$__all") {
				t.Errorf("%s/%s: resource variable defaults to %q with includeAll %v, want All", c.name, name, cur, vars[varResource]["includeAll"])
			}
		}
	}
}

// panelTitled returns the panel of d titled title.
func panelTitled(t *testing.T, d map[string]any, title string) map[string]any {
	t.Helper()
	for _, p := range panels(d) {
		if p["title"] == title {
			return p
		}
	}
	t.Fatalf("no panel titled %q", title)
	return nil
}

// statThresholds returns the threshold values of the stat titled title.
func statThresholds(t *testing.T, d map[string]any, title string) []float64 {
	t.Helper()
	var vs []float64
	for _, s := range path(panelTitled(t, d, title), "fieldConfig", "defaults", "thresholds", "steps").([]any) {
		if v, ok := s.(map[string]any)["value"].(float64); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func TestStatThresholdsFollowSpec(t *testing.T) {
	def := decodeAll(t, Config{})[FileName(uidOverview)]
	custom := decodeAll(t, configs[1].cfg)[FileName(uidOverview)]
	for _, c := range []struct {
		name  string
		d     map[string]any
		title string
		want  []float64
	}{
		{"default list latency", def, "List latency p95, worst", []float64{slo.DefaultListLatencyThresholdSeconds}},
		{"default canary", def, "Canary delivery p99, worst", []float64{slo.DefaultCanaryLatencyThresholdSeconds}},
		{"default staleness", def, "Cache staleness above proof period (min over 2m), worst", []float64{slo.DefaultStalenessThresholdSeconds}},
		{"default rv lag", def, "RV lag (min over 2m), worst", []float64{slo.DefaultRVLagThresholdRevisions}},
		{"custom list latency", custom, "List latency p95, worst", []float64{2.5}},
	} {
		if got := statThresholds(t, c.d, c.title); !slices.Equal(got, c.want) {
			t.Errorf("%s: thresholds %v, want %v", c.name, got, c.want)
		}
	}
	for _, p := range panels(custom) {
		if strings.HasPrefix(p["title"].(string), "Canary delivery p99") {
			t.Errorf("disabled canary SLO still has panel %q", p["title"])
		}
	}
}

func TestZeroSLOFieldsTakeDefaults(t *testing.T) {
	s := slo.DefaultSpec()
	s.SLOs = []slo.SLO{{Name: slo.ListLatency}}
	d := decodeAll(t, Config{Spec: s})[FileName(uidOverview)]
	if got := statThresholds(t, d, "List latency p95, worst"); !slices.Equal(got, []float64{slo.DefaultListLatencyThresholdSeconds}) {
		t.Errorf("thresholds %v, want the default", got)
	}
}

func TestInvalidSpecFails(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*slo.Spec)
	}{
		{"unknown SLO", func(s *slo.Spec) { s.SLOs[0].Name = "bogus" }},
		{"objective 1", func(s *slo.Spec) { s.SLOs[0].Objective = 1 }},
		{"bad selector", func(s *slo.Spec) { s.Selector = "job=" }},
		{"unparsable window", func(s *slo.Spec) { s.Windows[0].Long = "4 hours" }},
		{"long window beyond the budget period", func(s *slo.Spec) { s.BudgetPeriod = "12h" }},
	} {
		s := slo.DefaultSpec()
		c.mutate(&s)
		if _, err := Render(Config{Spec: s}); err == nil {
			t.Errorf("%s: Render succeeded", c.name)
		}
	}
}

// JSON walking.

func decodeAll(t *testing.T, cfg Config) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, data := range render(t, cfg) {
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = d
	}
	return out
}

func panels(d map[string]any) []map[string]any {
	var out []map[string]any
	ps, _ := d["panels"].([]any)
	for _, p := range ps {
		p := p.(map[string]any)
		out = append(out, p)
		out = append(out, panels(p)...) // a collapsed row's panels
	}
	return out
}

func targets(p map[string]any) []map[string]any {
	var out []map[string]any
	ts, _ := p["targets"].([]any)
	for _, t := range ts {
		out = append(out, t.(map[string]any))
	}
	return out
}

func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
