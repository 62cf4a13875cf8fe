//go:build integration

package alerts

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// amtoolConfig writes a whole Alertmanager configuration holding the
// routing of spec (receivers page and ticket, everything else to default)
// and returns amtool and the file.
func amtoolConfig(t *testing.T, spec slo.Spec) (string, string) {
	t.Helper()
	amtool := testenv.Command(t, "amtool", "prometheus-alertmanager")
	cfg := RoutingOf(spec).AlertmanagerConfig("page", "ticket", DefaultTiming)
	route := cfg["route"].(map[string]any)
	route["receiver"] = "default"
	cfg["receivers"] = []any{}
	for _, n := range []string{"default", "page", "ticket"} {
		cfg["receivers"] = append(cfg["receivers"].([]any), map[string]any{"name": n, "webhook_configs": []any{map[string]any{"url": "http://127.0.0.1:9/" + n}}})
	}
	b, err := encodeYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(amtool, "check-config", file).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s\n%s", err, out, b)
	}
	return amtool, file
}

// TestRoutingRoutes: with the routing of the default and a custom spec,
// Alertmanager (amtool's route test) sends every page of the generated
// alerts to the page receiver, every ticket to the ticket receiver, and
// other alerts elsewhere.
func TestRoutingRoutes(t *testing.T) {
	custom := slo.DefaultSpec()
	custom.ClusterLabel = "k8s_cluster"
	custom.Severities = slo.SeverityLabels{Page: "P1", Ticket: "P3"}
	for name, spec := range map[string]slo.Spec{"default": slo.DefaultSpec(), "custom": custom} {
		t.Run(name, func(t *testing.T) {
			amtool, file := amtoolConfig(t, spec)
			route := func(labels map[string]string) string {
				args := []string{"config", "routes", "test", "--config.file=" + file}
				for k, v := range labels {
					args = append(args, k+"="+v)
				}
				cmd := exec.Command(amtool, args...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output() // stderr holds a warning about --alertmanager.url
				if err != nil {
					t.Fatalf("amtool %v: %v\n%s%s", args, err, out, stderr.String())
				}
				return strings.TrimSpace(string(out))
			}
			seen := map[string]bool{}
			for _, r := range rules(t, spec) {
				if r.Alert == "" {
					continue
				}
				labels := maps.Clone(r.Labels)
				labels["alertname"], labels[spec.WithDefaults().ClusterLabel], labels["resource"] = r.Alert, "c1", "pods"
				want := "ticket"
				if r.Labels[slo.LabelSeverity] == spec.SeverityLabel(slo.SeverityPage) {
					want = "page"
				}
				seen[want] = true
				if got := route(labels); got != want {
					t.Errorf("%s %v: routed to %q, want %q", r.Alert, r.Labels, got, want)
				}
			}
			if !seen["page"] || !seen["ticket"] {
				t.Errorf("receivers used: %v; want pages and tickets", seen)
			}
			if got := route(map[string]string{"alertname": "KubeAPIDown", "severity": spec.SeverityLabel(slo.SeverityPage)}); got != "default" {
				t.Errorf("another project's page routed to %q, want default", got)
			}
		})
	}
}
