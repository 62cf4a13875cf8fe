//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/cluster"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// mainRelease is the release installed, loaded, upgraded and uninstalled
// in order: `helm install rvsync-slo` as the README says, at the chart's
// defaults but the image.
var mainRelease = helmRelease{name: "rvsync-slo", namespace: "rvsync"}

// The exporter's user and group in the image and the chart's securityContext.
const nonRoot = "65532"

// install: the Deployment becomes Available; its pod runs as the chart's
// securityContext says under the restricted Pod Security Standard, with
// in-cluster config; /metrics answers at the pod IP, at every address of
// the Service's endpoints and at its ClusterIP; the canary is written and
// delivered.
func (s *clusterSuite) install(t *testing.T) {
	r := mainRelease
	s.dumpRelease(t, r)
	start := time.Now()
	s.installRelease(t, r)
	p := &s.waitReady(t, r, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), rolloutTimeout)
	defer cancel()
	testenv.WaitFor(t, rolloutTimeout, "Deployment "+r.name+" Available", func() (bool, error) {
		d, err := s.client.AppsV1().Deployments(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		return err == nil && deploymentAvailable(d), err
	})
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			t.Logf("helm install → Deployment Available in %v; pod created → Ready in %v", time.Since(start).Round(100*time.Millisecond),
				c.LastTransitionTime.Sub(p.CreationTimestamp.Time))
		}
	}
	c := p.Spec.Containers[0]
	if c.Image != s.image || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s (%s), want the chart's default, the imported %s, with its IfNotPresent", c.Image, c.ImagePullPolicy, s.image)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--kubeconfig") }) {
		t.Errorf("the chart passes a kubeconfig: %v", c.Args)
	}

	t.Run("the process runs as the securityContext says", func(t *testing.T) {
		pid, err := cluster.ContainerPID(p.Status.ContainerStatuses[0].ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cluster.ProcStatus(pid)
		if err != nil {
			t.Fatal(err)
		}
		for field, want := range map[string]string{
			"Uid":        strings.Repeat(nonRoot+" ", 3) + nonRoot,
			"Gid":        strings.Repeat(nonRoot+" ", 3) + nonRoot,
			"CapEff":     "0000000000000000",
			"NoNewPrivs": "1",
			"Seccomp":    "2", // a filter: RuntimeDefault
		} {
			if st[field] != want {
				t.Errorf("/proc/%d/status %s: %q, want %q", pid, field, st[field], want)
			}
		}
		if ro, err := cluster.RootReadOnly(pid); err != nil || !ro {
			t.Errorf("root filesystem read-only: %v (%v)", ro, err)
		}
		env, err := cluster.Environ(pid)
		if err != nil {
			t.Fatal(err)
		}
		// in-cluster config dials the kubernetes Service with the projected token
		if env["KUBERNETES_SERVICE_HOST"] != cluster.KubernetesServiceIP {
			t.Errorf("KUBERNETES_SERVICE_HOST=%q, want %s", env["KUBERNETES_SERVICE_HOST"], cluster.KubernetesServiceIP)
		}
		token := fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", pid)
		if b, err := os.ReadFile(token); err != nil || len(b) == 0 {
			t.Errorf("no projected service-account token in the container: %v", err)
		}
	})

	t.Run("synced through in-cluster config", func(t *testing.T) {
		waitSynced(t, p, s.configuredResources(t, r))
	})

	t.Run("metrics at the pod IP, the Service's endpoints and its ClusterIP", func(t *testing.T) {
		want := net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(metricsPort(p))))
		var addrs []string
		testenv.WaitFor(t, time.Minute, "the Service's endpoints hold the pod", func() (bool, error) {
			var err error
			addrs, err = s.endpointAddresses(ctx, r.namespace, r.name, "metrics")
			return slices.Equal(addrs, []string{want}), err
		})
		svc, err := s.client.CoreV1().Services(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clusterIP := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
		for _, a := range append(addrs, clusterIP) {
			testenv.WaitFor(t, time.Minute, "/metrics at "+a, func() (bool, error) {
				m, err := testenv.Scrape("http://" + a + "/metrics")
				return err == nil && m[metricSynced] != nil, err
			})
		}
	})

	t.Run("canary written and delivered", func(t *testing.T) {
		testenv.WaitFor(t, 2*time.Minute, "a canary written and delivered", func() (bool, error) {
			m, err := testenv.Scrape(metricsURL(p))
			if err != nil {
				return false, err
			}
			written := m.Sum(metricCanaryWrites, map[string]string{labelResult: resultSuccess})
			delivered, _ := m.Value(metricCanaryDelivered, map[string]string{labelResource: "configmaps"})
			return written > 0 && delivered > float64(start.Unix()), fmt.Errorf("written %v, last delivered at %v", written, delivered)
		})
		if _, err := s.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, canaryPrefix+p.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the canary ConfigMap: %v", err)
		}
	})
}

// Load: the number of ConfigMaps the chart's default memory limit is
// promised for, and the churn on top. The soak creates them all; the gate
// creates a fifth of them (50,000 creates are 6 minutes of a loaded
// machine's API server, and the cluster is one per machine) and holds the
// exporter's growth, projected linearly to the promised count, under the
// limit.
const (
	loadPromised  = 50_000
	loadNamespace = "load"
	churnWritesPS = 100
)

// loadObjects is how many ConfigMaps the load creates, and churnFor how
// long it churns them.
func loadObjects() int {
	if testenv.Soak() {
		return loadPromised
	}
	return loadPromised / 5
}

var churnFor = testenv.Length(30*time.Second, time.Minute)

// load: with 50,000 ConfigMaps (a watched resource) and churn, the exporter
// stays under the chart's default memory limit: not OOM-killed, no
// restart, its peak RSS measured against the limit the runtime enforces.
// With fewer (the gate), its peak RSS above what it held before the load,
// scaled to 50,000, stays under the limit.
func (s *clusterSuite) load(t *testing.T) {
	r := mainRelease
	s.dumpRelease(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods, err := s.pods(ctx, r)
	if err != nil || len(pods) != 1 {
		t.Fatalf("want the installed pod, got %d (%v)", len(pods), err)
	}
	p := pods[0]
	before := p.Status.ContainerStatuses[0]
	pid, err := cluster.ContainerPID(before.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	memCgroup, err := cluster.MemoryCgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	limit := p.Spec.Containers[0].Resources.Limits.Memory().Value()
	if enforced := readInt(t, filepath.Join(memCgroup, "memory.limit_in_bytes")); enforced != limit {
		t.Errorf("the runtime enforces %d bytes, the chart asks %d", enforced, limit)
	}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: loadNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the ConfigMaps leave with their namespace (the namespace controller
	// deletes them while the next scenarios run)
	defer func() {
		_ = s.client.CoreV1().Namespaces().Delete(context.Background(), loadNamespace, metav1.DeleteOptions{})
	}()

	// what the exporter holds before the load: the base its growth is
	// measured from
	st, err := cluster.ProcStatus(pid)
	if err != nil {
		t.Fatalf("the exporter's process: %v", err)
	}
	base := parseKiB(t, st["VmRSS"])
	n := loadObjects()
	bulk := s.clientWithQPS(t, 1000)
	created := time.Now()
	if err := createConfigMaps(ctx, bulk, loadNamespace, n, 8); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ConfigMaps created in %v", n, time.Since(created).Round(time.Second))
	churned := make(chan int)
	churnCtx, stopChurn := context.WithTimeout(ctx, churnFor)
	defer stopChurn()
	go func() { churned <- testenv.Churn(churnCtx, bulk, loadNamespace, 1000, churnWritesPS) }()
	testenv.WaitFor(t, syncTimeout, fmt.Sprintf("the exporter holding ≥ %d ConfigMaps", n), func() (bool, error) {
		m, err := testenv.Scrape(metricsURL(&p))
		if err != nil {
			return false, err
		}
		held, _ := m.Value(metricObjects, map[string]string{labelResource: "configmaps"})
		return held >= float64(n), fmt.Errorf("%v ConfigMaps", held)
	})
	writes := <-churned
	t.Logf("%d churn writes over %v", writes, churnFor)

	after, err := s.client.CoreV1().Pods(r.namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := after.Status.ContainerStatuses[0]
	if cs.RestartCount != before.RestartCount || cs.ContainerID != before.ContainerID || cs.LastTerminationState.Terminated != nil {
		t.Errorf("the exporter restarted: %d restarts, last terminated %+v", cs.RestartCount, cs.LastTerminationState.Terminated)
	}
	if st, err = cluster.ProcStatus(pid); err != nil {
		t.Fatalf("the exporter's process is gone: %v", err)
	}
	peak := parseKiB(t, st["VmHWM"])
	usage := readInt(t, filepath.Join(memCgroup, "memory.max_usage_in_bytes"))
	// linear in the objects held: what it held before, plus its growth
	// scaled to the promised count (at that count, the peak itself)
	projected := base + (peak-base)*loadPromised/int64(n)
	t.Logf("exporter at %d ConfigMaps: peak RSS %s (now %s, %s before the load; at %d: %s), container cgroup peak %s, limit %s",
		n, mib(peak), st["VmRSS"], mib(base), loadPromised, mib(projected), mib(usage), mib(limit))
	if peak >= limit || projected >= limit {
		t.Errorf("peak RSS %s at %d ConfigMaps, %s projected to %d: at or above the limit %s", mib(peak), n, mib(projected), loadPromised, mib(limit))
	}
}

// createConfigMaps creates n small ConfigMaps named load-<i> in ns, with
// workers in parallel.
func createConfigMaps(ctx context.Context, c kubernetes.Interface, ns string, n, workers int) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d", i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
				if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// parseKiB reads a /proc/<pid>/status size ("46512 kB") in bytes.
func parseKiB(t *testing.T, v string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("status size %q: %v", v, err)
	}
	return n * 1024
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// upgrade: helm upgrade with other container resources, an SLO threshold
// and a canary interval (in the exporter's config): the pod rolls (its
// config checksum changed), runs with the new resources, and the
// PrometheusRule in the cluster holds the rules the new values render.
func (s *clusterSuite) upgrade(t *testing.T) {
	r := mainRelease
	s.dumpRelease(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), rolloutTimeout)
	defer cancel()
	pods, err := s.pods(ctx, r)
	if err != nil || len(pods) != 1 {
		t.Fatalf("want the installed pod, got %d (%v)", len(pods), err)
	}
	old := pods[0]
	rulesBefore := s.installedRules(t, r)

	r.values = map[string]any{
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "60m", "memory": "80Mi"},
			"limits":   map[string]any{"memory": "320Mi"},
		},
		"slo":    map[string]any{"cacheStaleness": map[string]any{"thresholdSeconds": 60}},
		"canary": map[string]any{"interval": "5s"},
	}
	if err := chart.Upgrade(s.opts(r)); err != nil {
		t.Fatal(err)
	}
	mainRelease = r // uninstall acts on the upgraded release
	p := &s.waitReady(t, r, 1, old.Name)[0]
	testenv.WaitFor(t, rolloutTimeout, "Deployment "+r.name+" rolled out", func() (bool, error) {
		d, err := s.client.AppsV1().Deployments(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		return err == nil && deploymentAvailable(d), err
	})
	const checksum = "checksum/config"
	if p.Annotations[checksum] == "" || p.Annotations[checksum] == old.Annotations[checksum] {
		t.Errorf("%s: %q before, %q after: the config change does not show", checksum, old.Annotations[checksum], p.Annotations[checksum])
	}
	res := p.Spec.Containers[0].Resources
	if !res.Limits.Memory().Equal(resource.MustParse("320Mi")) || !res.Requests.Memory().Equal(resource.MustParse("80Mi")) || !res.Requests.Cpu().Equal(resource.MustParse("60m")) {
		t.Errorf("the new pod's resources: %v", res)
	}
	rulesAfter := s.installedRules(t, r)
	if rulesAfter == rulesBefore {
		t.Error("the PrometheusRule did not change")
	}
	m, err := chart.Template(s.opts(r))
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.RuleFiles()
	if err != nil {
		t.Fatal(err)
	}
	want, err := chart.NormalRules(files[monv1.PrometheusRuleKind])
	if err != nil {
		t.Fatal(err)
	}
	if rulesAfter != want {
		t.Errorf("the PrometheusRule in the cluster is not what the new values render:\n%s", testenv.LineDiff(want, rulesAfter))
	}
	waitSynced(t, p, s.configuredResources(t, r))
	// the replaced exporter deleted its canary on the way out (its RBAC
	// still stands during a rollout)
	testenv.WaitFor(t, time.Minute, "the replaced pod's canary ConfigMap deleted", func() (bool, error) {
		_, err := s.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, canaryPrefix+old.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// installedRules returns the rules of r's PrometheusRule in the cluster,
// normalized (chart.NormalRules).
func (s *clusterSuite) installedRules(t *testing.T, r helmRelease) string {
	t.Helper()
	var pr monv1.PrometheusRule
	s.operatorObject(t, "prometheusrules", r.namespace, fullname(r), &pr)
	f, err := chart.RuleFile(&pr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := chart.NormalRules(f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fullname is the chart's object name for a release (see _helpers.tpl).
func fullname(r helmRelease) string {
	if strings.Contains(r.name, chart.Name) {
		return r.name
	}
	return r.name + "-" + chart.Name
}

// sharded: sharding.enabled with 2 shards runs two pods, and every
// configured resource is watched (has an informer series) in exactly one.
func (s *clusterSuite) sharded(t *testing.T) {
	r := helmRelease{name: "sharded", namespace: "rvsync-sharded", values: map[string]any{"sharding": map[string]any{"enabled": true, "shards": 2}}}
	s.dumpRelease(t, r)
	s.installRelease(t, r)
	defer s.uninstallQuietly(t, r)
	pods := s.waitReady(t, r, 2)
	resources := s.configuredResources(t, r)
	var owners map[string][]string
	testenv.WaitFor(t, syncTimeout, "each resource synced in exactly one shard", func() (bool, error) {
		owners = map[string][]string{}
		for _, p := range pods {
			m, err := testenv.Scrape(metricsURL(&p))
			if err != nil {
				return false, err
			}
			for res, v := range seriesByResource(m, metricSynced) {
				if v != 1 {
					return false, fmt.Errorf("%s not synced in %s", res, p.Name)
				}
				owners[res] = append(owners[res], p.Name)
			}
		}
		for _, res := range resources {
			if len(owners[res]) != 1 {
				return false, fmt.Errorf("%s watched by %v", res, owners[res])
			}
		}
		return len(owners) == len(resources), fmt.Errorf("%d resources watched, %d configured", len(owners), len(resources))
	})
	perPod := map[string]int{}
	for _, ps := range owners {
		perPod[ps[0]]++
	}
	t.Logf("%d resources over the shards: %v", len(resources), perPod)
	for _, p := range pods {
		if perPod[p.Name] == 0 {
			t.Errorf("shard %s watches nothing", p.Name)
		}
	}
}

// seriesByResource returns the value of each series of a family by its
// resource label.
func seriesByResource(m testenv.Metrics, name string) map[string]float64 {
	out := map[string]float64{}
	for _, mt := range m[name].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == labelResource {
				out[l.GetValue()] = mt.GetGauge().GetValue() + mt.GetCounter().GetValue() + mt.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// uninstallQuietly uninstalls r at the end of a scenario that only needs
// it for itself, so its pods stop taking CPU.
func (s *clusterSuite) uninstallQuietly(t *testing.T, r helmRelease) {
	s.describeFailure(t, r)
	if err := chart.Uninstall(s.opts(r)); err != nil {
		t.Logf("uninstall %s: %v", r.name, err)
	}
}

// Paging: the chart's watch-stalled page at its shortest (three bookmark
// periods and 120s, for 30s), and Prometheus evaluating every 5s; the
// scrape interval is the ServiceMonitor's. A watch that stalled before its
// first bookmark is judged by its session until that session's timeout
// (client-go asks 5 to 10 min) has passed: its page may come up to 11 min
// after the stall.
const (
	stalledAfterSeconds = 120
	evalInterval        = 5 * time.Second
	pageTimeout         = 12 * time.Minute
)

// paging: a real Prometheus finds the pod as the chart's ServiceMonitor
// describes (Kubernetes service discovery, the operator's relabeling) and
// evaluates the chart's PrometheusRule as installed; a stalled watch pages
// RvsyncWatchStalled through a real Alertmanager, and resolves.
//
// The stall: the pod's in-cluster config dials the API server at
// KUBERNETES_SERVICE_HOST and _PORT, which the release's env (the chart's
// `env` value, above the kubelet's service variables) points at an HTTPS
// proxy on the host (faultproxy.APIProxy, with a certificate of the
// cluster CA for the node's address); the other releases beside it keep
// the kubernetes Service. The proxy stalls watch responses only, the fault
// of a stuck watch stream: the exporter's head probe and canary writes
// keep flowing, as they must for the exporter to see its own cache fall
// behind. Pausing kube-apiserver or dropping the pod's packets would stall
// those too, a different fault.
func (s *clusterSuite) paging(t *testing.T) {
	cert, err := s.c.ServingCert(cluster.KubernetesServiceIP, s.c.NodeIP)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.StartAPIProxy(net.JoinHostPort(s.c.NodeIP, "0"), s.c.APIServerURL(), s.c.CAPool(), cert)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	host, port, _ := net.SplitHostPort(proxy.Addr())
	r := helmRelease{name: "paging", namespace: "rvsync-paging", values: map[string]any{
		"slo": map[string]any{"symptoms": map[string]any{"stalledAfterSeconds": stalledAfterSeconds, "stalledFor": "30s"}},
		"env": []any{
			map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": host},
			map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": port},
		},
	}}
	s.dumpRelease(t, r)
	s.installRelease(t, r)
	defer s.uninstallQuietly(t, r)
	p := &s.waitReady(t, r, 1)[0]
	waitSynced(t, p, s.configuredResources(t, r))
	if proxy.Watches() == 0 {
		t.Fatal("no watch of the pod passed the proxy")
	}

	var sm monv1.ServiceMonitor
	s.operatorObject(t, "servicemonitors", r.namespace, fullname(r), &sm)
	scrape, err := serviceMonitorScrapeConfigs(&sm, s.c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var pr monv1.PrometheusRule
	s.operatorObject(t, "prometheusrules", r.namespace, fullname(r), &pr)
	rules, err := chart.RuleFile(&pr)
	if err != nil {
		t.Fatal(err)
	}
	hook := startWebhook(t)
	am := startAlertmanager(t, s.logDir, hook.srv.URL)
	// Debian's Prometheus is built without Kubernetes service discovery:
	// `make testbin` builds Prometheus with it from the Go module proxy
	promBin, err := testenv.Binary("RVSYNC_PROMETHEUS", "prometheus-*/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	promStarted := time.Now()
	prom := startPrometheusWith(t, s.logDir, prometheusOptions{rules: rules, scrapeConfigs: scrape, alertmanager: am, interval: evalInterval, binary: promBin})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("webhook notifications:\n%s", hook.dump())
			t.Logf("Prometheus alerts:\n%s", prom.describeAlerts())
			// what the stalled-watch rule compares, and what resets a
			// silence (a relist, a new watch), through the test
			configMaps := fmt.Sprintf(`{%s=%q}`, labelResource, "configmaps")
			r := promv1.Range{Start: promStarted, End: time.Now(), Step: 30 * time.Second}
			for _, m := range []string{catalog.WatchSilence.Name, catalog.WatchBookmarkPeriod.Name, catalog.Relists.Name, catalog.WatchStarts.Name, catalog.WatchErrors.Name} {
				t.Logf("%s%s:\n%s", m, configMaps, prom.describeRange(m+configMaps, r))
			}
		}
	})
	sel := fmt.Sprintf(`namespace=%q,pod=%q,service=%q,job=%q,endpoint="metrics"`, r.namespace, p.Name, fullname(r), fullname(r))
	prom.waitQuery(t, 3*time.Minute, fmt.Sprintf(`up{%s} == 1`, sel))
	prom.waitQuery(t, 3*time.Minute, fmt.Sprintf(`%s{%s,%s="configmaps"} == 1`, metricSynced, sel, labelResource))
	// the chart's ServiceMonitor stores each histogram as one native series
	prom.waitQuery(t, 3*time.Minute, fmt.Sprintf(`count(%s{%s})`, catalog.ListDuration.Name, sel))
	if v, err := prom.query(fmt.Sprintf(`count(%s_bucket{%s})`, catalog.ListDuration.Name, sel)); err != nil || len(v) != 0 {
		t.Errorf("classic buckets of %s stored beside the native histograms: %v %v", catalog.ListDuration.Name, v, err)
	}
	as, err := prom.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.State == "firing" && a.Labels["severity"] == "critical" {
			t.Errorf("a page before the stall: %s", a.Labels)
		}
	}

	before, err := testenv.Scrape(metricsURL(p))
	if err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()
	proxy.StallWatches()
	released := false
	defer func() {
		if !released {
			proxy.Release()
		}
	}()
	page := hook.wait(t, pageTimeout, "a "+alertWatchStalled+" page for configmaps", func(a notifiedAlert) bool {
		return a.Status == "firing" && a.Labels["alertname"] == alertWatchStalled && a.Labels[labelResource] == "configmaps" && a.StartsAt.After(stalled)
	})
	t.Logf("paged %v after the watches stalled: %s", page.Received.Sub(stalled).Round(time.Second), page)
	if page.Labels["severity"] != "critical" || page.Annotations["summary"] == "" || page.Annotations["runbook_url"] == "" || page.Annotations["dashboard_url"] == "" {
		t.Errorf("the page lacks severity, summary, runbook_url or dashboard_url: %s", page)
	}
	during, err := testenv.Scrape(metricsURL(p))
	if err != nil {
		t.Fatal(err)
	}
	w0 := before.Sum(metricCanaryWrites, map[string]string{labelResult: resultSuccess})
	w1 := during.Sum(metricCanaryWrites, map[string]string{labelResult: resultSuccess})
	stale, _ := during.Value(metricStaleness, map[string]string{labelResource: "configmaps"})
	period, _ := during.Value(catalog.WatchBookmarkPeriod.Name, map[string]string{labelResource: "configmaps"})
	// the page waits for silence above max(3 bookmark periods, the
	// threshold) held for stalledFor: the period the exporter measured
	// sets how long that is
	t.Logf("during the stall: %v canary writes succeeded, configmaps staleness %vs, bookmark period %vs", w1-w0, stale, period)
	configMaps := fmt.Sprintf(`{%s=%q}`, labelResource, "configmaps")
	for _, m := range []string{catalog.WatchSilence.Name, catalog.WatchBookmarkPeriod.Name} {
		t.Logf("%s%s from the stall to the page:\n%s", m, configMaps, prom.describeRange(m+configMaps, promv1.Range{Start: stalled, End: time.Now(), Step: 30 * time.Second}))
	}
	if w1 <= w0 {
		t.Error("no canary write succeeded during the stall: the proxy stalled more than watches")
	}

	proxy.Release()
	released = true
	resolvedAfter := time.Now()
	a := hook.wait(t, 5*time.Minute, "the page resolved", func(a notifiedAlert) bool {
		return a.Status == "resolved" && a.Received.After(resolvedAfter) && sameLabels(a.Labels, page.Labels)
	})
	t.Logf("resolved %v after the release", a.Received.Sub(resolvedAfter).Round(time.Second))
}

// uninstall: helm uninstall leaves nothing of the release: no object with
// its instance label of any kind in any namespace, no helm release record,
// no pod, and no canary ConfigMap.
func (s *clusterSuite) uninstall(t *testing.T) {
	r := mainRelease
	s.dumpRelease(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 3*rolloutTimeout) // both waits below
	defer cancel()
	// what the exporter says on its way out explains a canary left behind
	pods, err := s.pods(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*followedLog
	for _, p := range pods {
		logs = append(logs, s.followLog(ctx, p))
	}
	if err := chart.Uninstall(s.opts(r)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range logs {
				t.Logf("log of %s until it ended:\n%s", l.pod, l.tail(15))
			}
		}
	})
	resources, err := s.client.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no object, record or pod of the release", func(t *testing.T) {
		testenv.WaitFor(t, rolloutTimeout, "nothing of release "+r.name+" left", func() (bool, error) {
			var left []string
			for _, rl := range resources {
				gv, err := schema.ParseGroupVersion(rl.GroupVersion)
				if err != nil {
					return false, err
				}
				for _, ar := range rl.APIResources {
					if !slices.Contains(ar.Verbs, "list") || strings.Contains(ar.Name, "/") {
						continue
					}
					list, err := s.dyn.Resource(gv.WithResource(ar.Name)).List(ctx, metav1.ListOptions{LabelSelector: labelInstance + "=" + r.name})
					if err != nil {
						return false, fmt.Errorf("list %s: %w", ar.Name, err)
					}
					for _, o := range list.Items {
						left = append(left, fmt.Sprintf("%s %s/%s", ar.Kind, o.GetNamespace(), o.GetName()))
					}
				}
			}
			secrets, err := s.client.CoreV1().Secrets(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + r.name})
			if err != nil {
				return false, err
			}
			for _, sec := range secrets.Items {
				left = append(left, "helm release record "+sec.Name)
			}
			pods, err := s.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Name)
			}
			sort.Strings(left)
			return len(left) == 0, fmt.Errorf("left: %v", left)
		})
	})
	// The exporter deletes its canary ConfigMap on SIGTERM, but helm
	// deletes the ServiceAccount and the canary's Role in the same pass as
	// the Deployment, before the pod gets its SIGTERM: the deletion is
	// refused and the ConfigMap stays. An ownerReference from the canary to
	// the exporter's Pod would let the garbage collector delete it.
	t.Run("no canary ConfigMap", func(t *testing.T) {
		// the exporter deletes it within its termination grace period (30s)
		testenv.WaitFor(t, 2*time.Minute, "no canary ConfigMap in "+r.namespace, func() (bool, error) {
			cms, err := s.client.CoreV1().ConfigMaps(r.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			var left []string
			for _, cm := range cms.Items {
				if strings.HasPrefix(cm.Name, canaryPrefix) {
					left = append(left, cm.Name)
				}
			}
			return len(left) == 0, fmt.Errorf("canary ConfigMaps left: %v", left)
		})
	})
}

// followedLog is a pod's log, read as it is written until the container
// ends.
type followedLog struct {
	pod string
	mu  sync.Mutex
	buf strings.Builder
}

// followLog starts reading p's log (through the API server and kubelet).
func (s *clusterSuite) followLog(ctx context.Context, p corev1.Pod) *followedLog {
	l := &followedLog{pod: p.Name}
	go func() {
		rc, err := s.client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Follow: true, TailLines: ptr(int64(5))}).Stream(ctx)
		if err != nil {
			l.write([]byte(err.Error()))
			return
		}
		defer rc.Close()
		buf := make([]byte, 32*1024)
		for {
			n, err := rc.Read(buf)
			l.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return l
}

func (l *followedLog) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
}

// tail returns the last n lines read.
func (l *followedLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return testenv.LastLines(l.buf.String(), n)
}
