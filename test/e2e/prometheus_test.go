//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// Prometheus timing: scrape and evaluate every second, so a `for` of a few
// seconds means what it says.
const (
	scrapeInterval = time.Second
	// resendDelay spaces Prometheus's re-sends of firing alerts; an alert
	// not re-sent within 4× it resolves in Alertmanager, so it must outlast
	// an evaluation delayed by a loaded machine.
	resendDelay = 5 * time.Second
)

// scrapeJob is the exporter's job name; alerts.DefaultUpSelector matches it.
const scrapeJob = "rvsync-slo"

// clusterName is the cluster label the scrape adds to every series, as the
// chart's ServiceMonitor does with cluster.name set.
const clusterName = "e2e"

// prometheusServer is a running Prometheus and its HTTP API.
type prometheusServer struct {
	url  string
	api  promv1.API
	tsdb string // its storage directory
}

// startPrometheus runs Prometheus scraping target every scrapeInterval
// with the given rule file and sending alerts to alertmanager (host:port),
// storing in a temp dir.
func startPrometheus(t *testing.T, logDir string, rules []byte, target, alertmanager string) *prometheusServer {
	t.Helper()
	return startPrometheusWith(t, logDir, prometheusOptions{
		rules:        rules,
		alertmanager: alertmanager,
		interval:     scrapeInterval,
		scrapeConfigs: []any{map[string]any{
			"job_name":       scrapeJob,
			"static_configs": []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"cluster": clusterName}}},
		}},
	})
}

// prometheusOptions configure a Prometheus.
type prometheusOptions struct {
	rules         []byte        // the rule file
	scrapeConfigs []any         // scrape_configs entries
	alertmanager  string        // host:port alerts go to
	interval      time.Duration // default scrape interval and the rule evaluation interval
	// binary is the Prometheus to run; empty: the Debian package's, which
	// is built without Kubernetes service discovery.
	binary string
	// name names its log file (<name>.log); empty: prometheus.
	name string
	// externalLabels label every series and alert that leaves this
	// Prometheus (global.external_labels).
	externalLabels map[string]string
	// alertRelabel are alerting.alert_relabel_configs entries.
	alertRelabel []any
}

// startPrometheusWith runs Prometheus as o says, storing in a temp dir,
// until the test ends.
func startPrometheusWith(t *testing.T, logDir string, o prometheusOptions) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	global := map[string]any{
		"scrape_interval":     model.Duration(o.interval).String(),
		"scrape_timeout":      model.Duration(o.interval).String(),
		"evaluation_interval": model.Duration(o.interval).String(),
	}
	alerting := map[string]any{
		"alertmanagers": []any{map[string]any{"static_configs": []any{map[string]any{"targets": []string{o.alertmanager}}}}},
	}
	if o.externalLabels != nil {
		global["external_labels"] = o.externalLabels
	}
	if o.alertRelabel != nil {
		alerting["alert_relabel_configs"] = o.alertRelabel
	}
	cfg := map[string]any{
		"global":         global,
		"rule_files":     []string{filepath.Join(dir, "rules.yaml")},
		"alerting":       alerting,
		"scrape_configs": o.scrapeConfigs,
	}
	writeYAML(t, filepath.Join(dir, "prometheus.yml"), cfg)
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), o.rules, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	url := "http://" + addr
	args := []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--rules.alert.resend-delay=" + model.Duration(resendDelay).String(),
		"--log.level=warn",
	}
	binary := o.binary
	if binary == "" {
		binary = installed(t, "prometheus")
	}
	startDaemonAt(t, cmpOr(o.name, "prometheus"), binary, logDir, url+"/-/ready", args...)
	p := newPromAPI(t, url, nil)
	p.tsdb = filepath.Join(dir, "data")
	return p
}

// newPromAPI is a client of the Prometheus HTTP API at url; transport, if
// not nil, carries its requests.
func newPromAPI(t *testing.T, url string, transport http.RoundTripper) *prometheusServer {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: url, RoundTripper: transport})
	if err != nil {
		t.Fatal(err)
	}
	return &prometheusServer{url: url, api: promv1.NewAPI(client)}
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func apiContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// query evaluates an instant query now.
func (p *prometheusServer) query(q string) (model.Vector, error) {
	ctx, cancel := apiContext()
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: want a vector, got %s", q, v.Type())
	}
	return vec, nil
}

// waitQuery waits until the instant query q returns at least one series.
func (p *prometheusServer) waitQuery(t *testing.T, timeout time.Duration, q string) model.Vector {
	t.Helper()
	var vec model.Vector
	testenv.WaitFor(t, timeout, "Prometheus to answer "+q, func() (bool, error) {
		var err error
		vec, err = p.query(q)
		return len(vec) > 0, err
	})
	return vec
}

// queryRange evaluates the range query q over r.
func (p *prometheusServer) queryRange(q string, r promv1.Range) (model.Matrix, error) {
	ctx, cancel := apiContext()
	defer cancel()
	v, _, _, err := p.api.QueryRange(ctx, q, r)
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("want a matrix, got %s", v.Type())
	}
	return m, nil
}

// hasData reports whether a range query over r returns at least one sample
// that is a number (not NaN).
func (p *prometheusServer) hasData(q string, r promv1.Range) (bool, error) {
	m, err := p.queryRange(q, r)
	if err != nil {
		return false, err
	}
	for _, s := range m {
		for _, pt := range s.Values {
			if !math.IsNaN(float64(pt.Value)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// alerts returns Prometheus's pending and firing alerts.
func (p *prometheusServer) alerts() ([]promv1.Alert, error) {
	ctx, cancel := apiContext()
	defer cancel()
	res, err := p.api.Alerts(ctx)
	return res.Alerts, err
}

// waitFiring waits until an alert named name with the given labels fires.
func (p *prometheusServer) waitFiring(t *testing.T, timeout time.Duration, name string, labels map[string]string) promv1.Alert {
	t.Helper()
	return p.waitAlert(t, timeout, name, labels, promv1.AlertStateFiring)
}

// waitAlert waits until an alert named name with the given labels is in
// one of states.
func (p *prometheusServer) waitAlert(t *testing.T, timeout time.Duration, name string, labels map[string]string, states ...promv1.AlertState) promv1.Alert {
	t.Helper()
	var found promv1.Alert
	testenv.WaitFor(t, timeout, fmt.Sprintf("Prometheus alert %s %v", name, states), func() (bool, error) {
		as, err := p.alerts()
		for _, a := range as {
			if slices.Contains(states, a.State) && string(a.Labels[model.AlertNameLabel]) == name && hasLabels(a.Labels, labels) {
				found = a
				return true, nil
			}
		}
		return false, err
	})
	return found
}

func hasLabels(ls model.LabelSet, want map[string]string) bool {
	for k, v := range want {
		if string(ls[model.LabelName(k)]) != v {
			return false
		}
	}
	return true
}

// describeAlerts renders Prometheus's alerts for a failure log.
func (p *prometheusServer) describeAlerts() string {
	as, err := p.alerts()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "%s %s active since %s value %s\n", a.State, a.Labels, a.ActiveAt.Format(time.TimeOnly), a.Value)
	}
	return b.String()
}

// describeVector returns the series of the instant query q now, one line
// per series with its value (for a log).
func (p *prometheusServer) describeVector(q string) string {
	v, err := p.query(q)
	if err != nil {
		return err.Error()
	}
	if len(v) == 0 {
		return "(no series)"
	}
	var b strings.Builder
	for _, s := range v {
		fmt.Fprintf(&b, "\n  %s = %.4g", s.Metric, float64(s.Value))
	}
	return b.String()
}

// describeRange returns the series of the range query q over r, one line
// per series with its values at r's steps (for a failure's log).
func (p *prometheusServer) describeRange(q string, r promv1.Range) string {
	m, err := p.queryRange(q, r)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range m {
		fmt.Fprintf(&b, "%s:", s.Metric)
		for _, pt := range s.Values {
			fmt.Fprintf(&b, " %s=%.4g", pt.Timestamp.Time().Format(time.TimeOnly), float64(pt.Value))
		}
		b.WriteString("\n")
	}
	return b.String()
}
