//go:build integration

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Receivers of the test's Alertmanager, all the same webhook: pages and
// tickets as docs/alertmanager.yaml routes them, and anything else.
const (
	receiverPage   = "page"
	receiverTicket = "ticket"
	receiverOther  = "other"
)

// amTiming is the shipped routing's timing (alerts.DefaultTiming) with the
// same group_wait, which gathers an incident's alerts into its first
// notification, and intervals short enough for the scenarios to see
// resolved notifications within minutes.
var amTiming = alerts.Timing{GroupWait: alerts.DefaultTiming.GroupWait, GroupInterval: "5s", RepeatInterval: "1h"}

// startAlertmanager runs Alertmanager, clustering off, with the routing
// and inhibition the project ships for the default cluster label and
// severities (alerts.RoutingOf, as in docs/alertmanager.yaml), sending
// every notification, resolved ones too, to webhookURL, and returns its
// host:port.
func startAlertmanager(t *testing.T, logDir, webhookURL string) string {
	t.Helper()
	cfg := alerts.RoutingOf(slo.DefaultSpec()).AlertmanagerConfig(receiverPage, receiverTicket, amTiming)
	route := cfg["route"].(map[string]any)
	route["receiver"] = receiverOther
	route["group_wait"], route["group_interval"], route["repeat_interval"] = "1s", "1s", "1h"
	var receivers []any
	for _, name := range []string{receiverPage, receiverTicket, receiverOther} {
		receivers = append(receivers, webhookReceiver(name, webhookURL))
	}
	cfg["receivers"] = receivers
	return runAlertmanager(t, logDir, cfg)
}

// startAlertmanagerPerAlert runs Alertmanager with every alert a group of
// its own, so a notification names one alert and comes again only when it
// resolves or after the repeat interval: for counting pages per alert.
func startAlertmanagerPerAlert(t *testing.T, logDir, webhookURL string) string {
	t.Helper()
	return runAlertmanager(t, logDir, map[string]any{
		"route": map[string]any{
			"receiver":        "webhook",
			"group_by":        []string{"..."},
			"group_wait":      "1s",
			"group_interval":  "1s",
			"repeat_interval": "1h",
		},
		"receivers": []any{webhookReceiver("webhook", webhookURL)},
	})
}

func webhookReceiver(name, url string) map[string]any {
	return map[string]any{
		"name":            name,
		"webhook_configs": []any{map[string]any{"url": url, "send_resolved": true}},
	}
}

// runAlertmanager runs Alertmanager with cfg, clustering off, and returns
// its host:port.
func runAlertmanager(t *testing.T, logDir string, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	writeYAML(t, filepath.Join(dir, "alertmanager.yml"), cfg)
	addr := freeAddr(t)
	startDaemon(t, "prometheus-alertmanager", logDir, "http://"+addr+"/-/ready",
		"--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
		"--log.level=warn",
	)
	return addr
}
