//go:build integration

package dashboards

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// TestWorstLatencyIsTheWorstResources: the Overview's "List latency p95,
// worst" stat shows the p95 of the slowest resource, not the p95 of every
// resource's Lists pooled, where a busy fast resource hides a slow one.
// Ground truth, evaluated by promtool: pods lists 1000 times a minute in
// under 0.1 s, nodes 10 times in 0.1-10 s; nodes' p95 is 9.505 s
// (interpolated in its bucket), the pooled p95 below 0.1 s.
func TestWorstLatencyIsTheWorstResources(t *testing.T) {
	promtool := testenv.Command(t, "promtool", "prometheus")
	d := decodeAll(t, Config{})[FileName(uidOverview)]
	tg := targets(panelTitled(t, d, "List latency p95, worst"))
	if len(tg) != 1 {
		t.Fatalf("targets %v: want one", tg)
	}
	expr := strings.NewReplacer("$__rate_interval", "5m", "$"+varCluster, ".*", "$"+varResource, ".*").Replace(tg[0]["expr"].(string))

	var series []map[string]string
	for _, s := range []struct {
		resource, le string
		perMinute    int
	}{{"pods", "0.1", 1000}, {"pods", "10", 1000}, {"pods", "+Inf", 1000}, {"nodes", "0.1", 0}, {"nodes", "10", 10}, {"nodes", "+Inf", 10}} {
		series = append(series, map[string]string{
			"series": catalog.ListDuration.Name + `_bucket{cluster="c1",resource="` + s.resource + `",kind="` + catalog.KindList + `",result="ok",le="` + s.le + `"}`,
			"values": "0+" + strconv.Itoa(s.perMinute) + "x20",
		})
	}
	test := map[string]any{"tests": []any{map[string]any{
		"interval":     "1m",
		"input_series": series,
		"promql_expr_test": []any{map[string]any{
			"expr":        "((" + expr + ") > bool 9.5) * ((" + expr + ") < bool 9.51)",
			"eval_time":   "15m",
			"exp_samples": []any{map[string]any{"labels": "{}", "value": 1}},
		}},
	}}}
	b, err := yaml.Marshal(test)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "worst.test.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("%s: want nodes' p95, 9.505 s (not the pooled p95, below 0.1 s): %v\n%s", expr, err, out)
	}
}
