//go:build integration

package exporter

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// The exporter's whole /metrics, with every family populated, passes
// `promtool check metrics` (Debian package prometheus; `make deps`).
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package prometheus (make deps)")
	}
	env := sharedEnv(t)
	cfg := canaryConfig("canary-promtool", 10*time.Second)
	cfg.Resources = resources("configmaps", "deployments.apps")
	r := startExporter(t, cfg, env.Config, nil)
	r.waitSynced(t, "configmaps", "deployments.apps")
	m := r.waitMetric(t, time.Minute, "canary delivered", func(m testenv.Metrics) bool {
		_, ok := m.Value(catalog.CanaryLastDelivered.Name, res("configmaps"))
		return ok
	})
	for _, fam := range []catalog.Metric{catalog.UnconvergedObjects, catalog.CanaryDeliveryLatency, catalog.ListDuration, catalog.BuildInfo} {
		if _, ok := m[fam.Name]; !ok {
			t.Errorf("%s missing from the scrape", fam.Name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
