//go:build integration

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// The chart release the exporter runs as.
const (
	release   = "e2e"
	namespace = "rvsync-e2e"
	podName   = "rvsync-e2e-0"
)

// workloadNamespace holds the churned ConfigMaps and converging Deployments.
const workloadNamespace = "e2e-workload"

// Workload rates: low enough that a quiet resource's RV lag between two
// watch bookmarks (~1 min) stays below the RV-lag SLO's 500 revisions.
const (
	churnObjects  = 20
	churnRate     = 3.0 // ConfigMap writes per second
	convergeEvery = time.Second
)

// The exporter's intervals (chart values): short, so that scaled-down
// burn-rate windows hold enough samples.
const (
	probeInterval  = time.Second
	canaryInterval = time.Second
)

// stack is everything the scenarios share.
type stack struct {
	env         *testenv.Env
	procs       *testenv.Processes
	proxy       *faultproxy.Proxy // between the exporter's informers and the API server
	exporter    *testenv.Exporter
	prom        *prometheusServer
	hook        *webhook
	spec        slo.Spec
	chart       chart.Manifests // the chart as rendered for this stack
	resources   []string        // every resource the exporter watches
	logDir      string
	start       time.Time
	snapshotDir string // outlives the scenarios
	snapshot    string // etcd data copied while paused (scenario 3), restored in scenario 5
}

// testSpec is the SLO spec of the test's rule file: the default SLOs with
// burn-rate windows scaled by 1/60 (1h → 1m, 5m → 5s) and the symptom
// alerts' durations at their minimum, so every alert can fire in minutes.
func testSpec() slo.Spec {
	s := slo.DefaultSpec().ScaledWindows(1.0 / 60)
	s.Symptoms.StalledAfterSeconds = 120 // the least Validate accepts: two bookmark periods
	s.Symptoms.StalledFor = "5s"
	s.Symptoms.NotSyncedFor = "1m"
	s.Symptoms.ErrorsFor = "30s"
	return s
}

// stackOptions are what differs between the stacks of the suites.
type stackOptions struct {
	// etcdMembers above 1 runs etcd as a cluster (testenv.EtcdCluster).
	etcdMembers int
	// valuesFiles are chart values files, applied under the test's
	// intervals.
	valuesFiles []string
	// ownMonitoring starts no Prometheus, Alertmanager or webhook: the
	// suite runs its own (TestFleet: several Prometheus per Alertmanager).
	ownMonitoring bool
}

// startStack starts a stack of its own: control plane, workload, exporter,
// Prometheus, Alertmanager and webhook on ports of their own, so suites can
// run in parallel.
func startStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	s := &stack{spec: testSpec(), logDir: t.TempDir(), snapshotDir: t.TempDir(), start: time.Now()}
	s.env = testenv.StartT(t, testenv.Options{EtcdMembers: opts.etcdMembers, LogDir: s.logDir})
	var err error
	if s.procs, err = s.env.Processes(logFile(t, s.logDir, "control-plane.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.procs.Stop(); err != nil {
			t.Logf("stop control plane processes: %v", err)
		}
	})
	// testenv runs etcd with 5s watch progress notifications, as kubeadm
	// does: quiet resources' bookmarks then carry the current revision.

	cfg, asSA := s.installChart(t, opts.valuesFiles)
	var proxied *rest.Config
	s.proxy, proxied = s.env.Proxy(t, asSA)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.EnsureNamespace(ctx, s.env.Client, workloadNamespace); err != nil {
		t.Fatal(err)
	}
	go testenv.Churn(ctx, s.env.Client, workloadNamespace, churnObjects, churnRate)
	go converge(ctx, s.env.Client, workloadNamespace, 3, convergeEvery)

	s.exporter = testenv.StartExporterT(t, testenv.ExporterOptions{
		Config: cfg, Informer: proxied, Probe: asSA,
		// What the pod has and a process on loopback has not: its name from
		// the downward API (the canary object is named after it).
		Env: []string{"POD_NAME=" + podName, "POD_NAMESPACE=" + namespace},
		Log: logFile(t, s.logDir, "exporter.log"),
	})
	if opts.ownMonitoring {
		return s
	}
	s.hook = startWebhook(t)
	am := startAlertmanager(t, s.logDir, s.hook.srv.URL)
	rules, err := alerts.Render(s.spec)
	if err != nil {
		t.Fatal(err)
	}
	s.prom = startPrometheus(t, s.logDir, rules, s.exporter.Addr, am)
	return s
}

// installChart renders the chart with valuesFiles and the test's
// intervals, applies its Kubernetes objects (RBAC included) and returns the
// exporter config file it renders, after checking that the exporter accepts
// it, and a client configuration acting as the chart's ServiceAccount.
func (s *stack) installChart(t *testing.T, valuesFiles []string) ([]byte, *rest.Config) {
	t.Helper()
	file, sa := s.applyChartWith(t, chart.Options{ValuesFiles: valuesFiles, Values: map[string]any{
		"exporter": map[string]any{"probeInterval": probeInterval.String()},
		"canary":   map[string]any{"interval": canaryInterval.String(), "deadline": canaryDeadline.String()},
	}})
	asSA := rest.CopyConfig(s.env.Config)
	asSA.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + sa}
	return file, asSA
}

// applyChart renders the chart with values, applies its Kubernetes objects
// (RBAC included) and returns the exporter config file it renders, after
// checking that the exporter accepts it, and the name of its ServiceAccount.
func (s *stack) applyChart(t *testing.T, values map[string]any) ([]byte, string) {
	t.Helper()
	return s.applyChartWith(t, chart.Options{Values: values})
}

// applyChartWith is applyChart with values files: it renders the chart as
// opts says, as release in namespace.
func (s *stack) applyChartWith(t *testing.T, opts chart.Options) ([]byte, string) {
	t.Helper()
	opts.Release, opts.Namespace = release, namespace
	m, err := chart.Template(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.chart = m
	core, _ := m.Split()
	a, err := chart.NewApplier(s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := a.Apply(ctx, core); err != nil {
		t.Fatal(err)
	}

	var cfgMap corev1.ConfigMap
	var sa corev1.ServiceAccount
	for _, u := range m {
		switch {
		case u.GetKind() == "ConfigMap" && strings.HasSuffix(u.GetName(), "-config"):
			err = chart.Into(u, &cfgMap)
		case u.GetKind() == "ServiceAccount":
			err = chart.Into(u, &sa)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	file := []byte(cfgMap.Data["config.yaml"])
	effective, err := testenv.CheckConfig(file)
	if err != nil {
		t.Fatalf("the exporter rejects the chart's config: %v", err)
	}
	s.resources = testenv.ConfigResources(effective)
	return file, sa.Name
}

// metrics scrapes the exporter.
func (s *stack) metrics(t *testing.T) testenv.Metrics {
	t.Helper()
	m, err := testenv.Scrape(s.exporter.MetricsURL())
	if err != nil {
		t.Fatalf("scrape the exporter: %v", err)
	}
	return m
}

// waitMetrics waits until cond holds on a scrape of the exporter.
func (s *stack) waitMetrics(t *testing.T, timeout time.Duration, what string, cond func(testenv.Metrics) bool) testenv.Metrics {
	t.Helper()
	var last testenv.Metrics
	testenv.WaitFor(t, timeout, what, func() (bool, error) {
		m, err := testenv.Scrape(s.exporter.MetricsURL())
		if err != nil {
			return false, err
		}
		last = m
		return cond(m), nil
	})
	return last
}

// assertRunning fails the test if the exporter process has exited.
func (s *stack) assertRunning(t *testing.T) {
	t.Helper()
	if s.exporter.Exited() {
		t.Fatal("the exporter stopped; see exporter.log")
	}
}

func res(name string) map[string]string { return map[string]string{catalog.LabelResource: name} }

// allSynced reports whether every watched resource's informer has synced.
func (s *stack) allSynced(m testenv.Metrics) bool { return s.unsynced(m) == "" }

// unsynced names a watched resource whose informer has not synced; "" if
// none.
func (s *stack) unsynced(m testenv.Metrics) string {
	for _, r := range s.resources {
		if v, _ := m.Value(catalog.InformerSynced.Name, res(r)); v != 1 {
			return r
		}
	}
	return ""
}

// scenario starts a scenario: on failure it logs what explains it.
func (s *stack) scenario(t *testing.T) {
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("took %v", time.Since(start).Round(time.Second))
		if t.Failed() {
			s.dump(t)
		}
	})
}

// dump logs the webhook's notifications, Prometheus's alerts, the
// exporter's rvsync series and the tails of the process logs.
func (s *stack) dump(t *testing.T) {
	if s.hook != nil {
		t.Logf("webhook notifications:\n%s", s.hook.dump())
	}
	if s.prom != nil {
		t.Logf("Prometheus alerts:\n%s", s.prom.describeAlerts())
	}
	if s.exporter != nil { // an HA stack runs its exporters itself
		if m, err := testenv.Scrape(s.exporter.MetricsURL()); err == nil {
			t.Logf("exporter scrape:\n%s", describeMetrics(m))
		} else {
			t.Logf("exporter scrape: %v", err)
		}
	}
	entries, _ := os.ReadDir(s.logDir)
	for _, e := range entries {
		t.Logf("tail of %s:\n%s", e.Name(), testenv.Tail(filepath.Join(s.logDir, e.Name()), 40))
	}
}
