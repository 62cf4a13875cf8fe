package e2e

import (
	"path/filepath"
	"testing"
)

// startAlertmanager runs Alertmanager, clustering off, routing every alert
// to webhookURL with resolved notifications, grouped by alert and resource
// and sent at once, and returns its host:port.
func startAlertmanager(t *testing.T, logDir, webhookURL string) string {
	t.Helper()
	return startAlertmanagerGrouped(t, logDir, webhookURL, []string{"alertname", "resource"})
}

// startAlertmanagerGrouped is startAlertmanager grouping by groupBy
// (["..."]: every alert a group of its own, so a notification names one
// alert and comes again only when it resolves or after the repeat interval).
func startAlertmanagerGrouped(t *testing.T, logDir, webhookURL string, groupBy []string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{
		"route": map[string]any{
			"receiver":        "webhook",
			"group_by":        groupBy,
			"group_wait":      "1s",
			"group_interval":  "1s",
			"repeat_interval": "1h",
		},
		"receivers": []any{map[string]any{
			"name":            "webhook",
			"webhook_configs": []any{map[string]any{"url": webhookURL, "send_resolved": true}},
		}},
	}
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
