package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// demoSpec is the SLO spec of the chart's rules at its default values, as
// release rvsync-slo in namespace demo for a Prometheus without the
// Prometheus Operator (monitoring=plain: the rules ConfigMap).
// charts/rvsync-slo/files/rules/rvsync-slo.rules.tpl.yaml is the Helm
// template of alerts.Render, and with those values it renders
// alerts.Render(demoSpec()): the chart pins the runbook links to its
// version, prefixes the dashboard UIDs (in the alerts' dashboard links)
// with the release's full name and puts the alerts in the release
// namespace. TestRulesAreTheCharts checks it against `helm template`, so
// the demo needs no helm to load the chart's rules.
func demoSpec() (slo.Spec, error) {
	version, err := chart.Version()
	if err != nil {
		return slo.Spec{}, err
	}
	s := slo.DefaultSpec()
	s.RunbookURLPrefix = "https://github.com/rvsync-slo/rvsync-slo/blob/v" + version + "/docs/runbooks.md#"
	s.DashboardUIDPrefix = chart.Name + "-"
	s.AlertNamespace = workloadNamespace
	return s, nil
}

// Scrape: the job name the rules' up selector (slo.DefaultUpSelector, the
// chart's without the operator) matches, and the cluster label the chart's ServiceMonitor adds with
// cluster.name set.
const (
	scrapeJob   = "rvsync-slo"
	clusterName = "demo"
)

// scrapeInterval is the scrape and rule-evaluation interval: shorter than
// the chart's 30s so the table's alert states follow the signals closely.
// The rules' windows and `for` durations are the shipped ones.
const scrapeInterval = 5 * time.Second

// amTiming is the shipped routing's timing (alerts.DefaultTiming) but for
// the group interval: 10s instead of 5m, so a page's resolution reaches the
// receiver seconds after it resolves, not up to five minutes later.
var amTiming = alerts.Timing{GroupWait: alerts.DefaultTiming.GroupWait, GroupInterval: "10s", RepeatInterval: alerts.DefaultTiming.RepeatInterval}

// alertmanagerConfig is docs/alertmanager.yaml's routing and inhibition
// (alerts.RoutingOf) with amTiming, every receiver the demo's webhook.
func alertmanagerConfig(r *receiver) (map[string]any, error) {
	spec, err := demoSpec()
	if err != nil {
		return nil, err
	}
	cfg := alerts.RoutingOf(spec).AlertmanagerConfig(receiverPage, receiverTicket, amTiming)
	route := cfg["route"].(map[string]any)
	route["receiver"] = receiverOther
	var receivers []any
	for _, name := range []string{receiverPage, receiverTicket, receiverOther} {
		receivers = append(receivers, map[string]any{
			"name":            name,
			"webhook_configs": []any{map[string]any{"url": r.url(name), "send_resolved": true}},
		})
	}
	cfg["receivers"] = receivers
	return cfg, nil
}

// prometheusConfig scrapes the exporter at target, loads rulesFile and
// sends alerts to the Alertmanager at alertmanager (host:port).
func prometheusConfig(target, rulesFile, alertmanager string) map[string]any {
	every := scrapeInterval.String()
	return map[string]any{
		"global":     map[string]any{"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
		"rule_files": []string{rulesFile},
		"alerting": map[string]any{
			"alertmanagers": []any{map[string]any{"static_configs": []any{map[string]any{"targets": []string{alertmanager}}}}},
		},
		"scrape_configs": []any{map[string]any{
			"job_name":       scrapeJob,
			"static_configs": []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"cluster": clusterName}}},
		}},
	}
}

// Debian's packages provide both programs (`make deps`).
const (
	prometheusCommand   = "prometheus"
	alertmanagerCommand = "prometheus-alertmanager"
)

// startAlertmanager runs Alertmanager on addr, clustering off, with its
// configuration and data under dir.
func startAlertmanager(ctx context.Context, dir, addr string, r *receiver, log *os.File) (*process.Process, error) {
	am, err := alertmanagerConfig(r)
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := writeYAML(cfg, am); err != nil {
		return nil, err
	}
	return startDaemon(ctx, alertmanagerCommand, "http://"+addr+"/-/ready", log,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "alertmanager-data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
		"--log.level=warn",
	)
}

// startPrometheus runs Prometheus on addr with the demo's rules, scraping
// the exporter at target, its configuration and data under dir.
func startPrometheus(ctx context.Context, dir, addr, target, alertmanager string, log *os.File) (*process.Process, error) {
	rules, err := demoRules()
	if err != nil {
		return nil, err
	}
	rulesFile := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, rules, 0o600); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := writeYAML(cfg, prometheusConfig(target, rulesFile, alertmanager)); err != nil {
		return nil, err
	}
	return startDaemon(ctx, prometheusCommand, "http://"+addr+"/-/ready", log,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
}

// demoRules is the rule file the demo's Prometheus loads.
func demoRules() ([]byte, error) {
	spec, err := demoSpec()
	if err != nil {
		return nil, err
	}
	return alerts.Render(spec)
}

// startDaemon runs an installed program with args and waits until GET
// readyURL answers 200.
func startDaemon(ctx context.Context, name, readyURL string, log *os.File, args ...string) (*process.Process, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed: `make deps` installs the Debian packages prometheus and prometheus-alertmanager", name)
	}
	p := &process.Process{Path: path, Args: args, Log: log}
	if err := p.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = process.Poll(ctx, name+" ready", func(ctx context.Context) error {
		if p.Exited() {
			return process.ErrExited
		}
		return process.GetOK(ctx, readyURL)
	})
	if err != nil {
		_ = p.Stop(10 * time.Second)
		return nil, fmt.Errorf("%w; its log ends:\n%s", err, process.Tail(log.Name(), 20))
	}
	return p, nil
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
