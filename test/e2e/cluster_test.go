//go:build integration

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/cluster"
	rvrelease "github.com/rvsync-slo/rvsync-slo/internal/testing/release"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// The exporter's series and alerts the cluster tests read, in one place:
// names that the catalog keeps stable.
const (
	metricSynced          = "rvsync_informer_synced"
	metricStaleness       = "rvsync_cache_staleness_seconds"
	metricCanaryWrites    = "rvsync_canary_writes_total"
	metricObjects         = "rvsync_objects"
	metricCanaryDelivered = "rvsync_canary_last_delivered_timestamp_seconds"
	labelResource         = "resource"
	labelResult           = "result"
	resultSuccess         = "success"
	alertWatchStalled     = "RvsyncWatchStalled"
	canaryPrefix          = "rvsync-canary-" // the canary ConfigMap is this plus the pod name
)

// The chart's identity labels (app.kubernetes.io/*), by which a release's
// objects are found.
const (
	labelInstance = "app.kubernetes.io/instance"
	labelName     = "app.kubernetes.io/name"
)

// Deadlines on a loaded 2-core machine: generous, never fixed sleeps.
const (
	rolloutTimeout = 5 * time.Minute
	syncTimeout    = 5 * time.Minute
)

// clusterSuite is a real single-node cluster with the Prometheus
// Operator's CRDs (the chart at its defaults creates a ServiceMonitor and a
// PrometheusRule) and the exporter image imported.
type clusterSuite struct {
	c      *cluster.Cluster
	client kubernetes.Interface
	dyn    dynamic.Interface
	logDir string
	// chart is the packaged chart every release installs, and image the
	// name of the exporter image imported (the chart's default image).
	chart, image string

	mu        sync.Mutex
	described map[string]bool // describeFailure's test/release pairs
}

// TestCluster is what the user does: helm install the chart into a real
// cluster (images imported, never pulled), load it, upgrade, shard,
// scrape it with Prometheus and page through Alertmanager, uninstall. It
// runs beside the other suites (one such cluster per machine: the
// cluster's host lock keeps others, such as internal/testing/cluster's own
// test in another process, waiting). The gate's cluster has one API server
// and loads a fifth of the objects; the soak's has three, restarts them in
// turn behind the kubernetes Service, and loads all 50,000.
func TestCluster(t *testing.T) {
	t.Parallel()
	s := startClusterSuite(t)
	t.Run("install", s.install)
	t.Run("ha_api_servers_rolling_restart_through_the_service", s.haRollingRestart)
	// side by side, as releases of one cluster are: the main release
	// loaded then upgraded, a sharded release, and a release whose
	// watches stall (its own route to the API server) paging through
	// Prometheus and Alertmanager
	t.Run("releases", func(t *testing.T) {
		t.Run("main", func(t *testing.T) {
			t.Parallel()
			t.Run("objects_under_the_memory_limit", s.load)
			t.Run("upgrade_rolls_the_pod_and_changes_the_rules", s.upgrade)
		})
		t.Run("sharded_each_resource_watched_once", parallel(s.sharded))
		t.Run("scraped_and_pages_on_a_stalled_watch", parallel(s.paging))
	})
	t.Run("uninstall_leaves_nothing", s.uninstall)
}

// parallel runs a subtest beside its siblings.
func parallel(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		f(t)
	}
}

func startClusterSuite(t *testing.T) *clusterSuite {
	t.Helper()
	ctx := testenv.UntilDeadline(t) // the machine-wide cluster lock: another gate may hold it long
	s := &clusterSuite{logDir: t.TempDir()}
	image := releaseArtifacts(t, s)
	var err error
	if s.c, err = cluster.Start(ctx, cluster.Options{Logf: t.Logf, LogDir: s.logDir, Images: []string{image}, APIServers: clusterAPIServers()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.c.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	s.client = s.c.Client
	if s.dyn, err = dynamic.NewForConfig(s.c.Config); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chart.InstallOperatorCRDs(ctx, s.c.Config); err != nil {
		t.Fatal(err)
	}
	return s
}

// releaseArtifacts sets the chart .tgz and the image the suite installs,
// and returns the image tarball to import: what a user installs from a
// release. That is the release build in dist/ (`make release-dry-run`, as
// CI runs it before the tests) when it holds the chart's version, with the
// image tarball of this machine's architecture; else the chart packaged
// and the image built here as the release builds them (helm package;
// hack/tools/image, named as the release names it). Either way the chart
// installs at its default image, which the imported tarball is.
func releaseArtifacts(t *testing.T, s *clusterSuite) (imageTarball string) {
	t.Helper()
	a, ok, err := rvrelease.Find()
	if err != nil {
		t.Fatal(err)
	}
	s.image = a.ImageRef()
	if ok {
		t.Logf("installing the release build of %s: %s and %s", a.Version, a.Chart(), a.HostImage())
		s.chart = a.Chart()
		return a.HostImage()
	}
	built := time.Now()
	dir := t.TempDir()
	if s.chart, err = chart.Package(dir); err != nil {
		t.Fatal(err)
	}
	if imageTarball, err = cluster.BuildImage(context.Background(), dir, cluster.ExporterProgram, s.image); err != nil {
		t.Fatal(err)
	}
	t.Logf("no release build in %s: packaged %s and built %s in %v", a.Dir, s.chart, s.image, time.Since(built).Round(time.Second))
	return imageTarball
}

// helmRelease is one helm release of the chart in the cluster.
type helmRelease struct {
	name, namespace string
	values          map[string]any
}

// opts are the helm options of r: the packaged chart and the cluster. The
// chart's default image is the imported one, which its default pull
// policy, IfNotPresent, finds without a registry.
func (s *clusterSuite) opts(r helmRelease) chart.Options {
	values := map[string]any{}
	for k, v := range r.values {
		values[k] = v
	}
	return chart.Options{Chart: s.chart, Release: r.name, Namespace: r.namespace, Values: values, Kubeconfig: s.c.Kubeconfig}
}

// installRelease creates r's namespace enforcing the restricted Pod
// Security Standard and helm installs r into it.
func (s *clusterSuite) installRelease(t *testing.T, r helmRelease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace, Labels: chart.RestrictedNamespaceLabels}}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := chart.Install(s.opts(r)); err != nil {
		t.Fatal(err)
	}
}

// pods returns r's pods that are not being deleted.
func (s *clusterSuite) pods(ctx context.Context, r helmRelease) ([]corev1.Pod, error) {
	list, err := s.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelInstance + "=" + r.name})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// waitReady waits until r has exactly n pods, all Ready, none of them in
// old (the names of pods a rollout must replace), and returns them.
func (s *clusterSuite) waitReady(t *testing.T, r helmRelease, n int, old ...string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	testenv.WaitFor(t, rolloutTimeout, fmt.Sprintf("%d Ready pods of release %s", n, r.name), func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		all, err := s.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelInstance + "=" + r.name})
		if err != nil {
			return false, err
		}
		pods = all.Items
		if len(pods) != n {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || !podReady(&p) {
				return false, fmt.Errorf("pod %s not Ready: %s", p.Name, podState(&p))
			}
			for _, o := range old {
				if p.Name == o {
					return false, fmt.Errorf("pod %s not replaced", o)
				}
			}
		}
		return true, nil
	})
	return pods
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podState summarizes why a pod is not Ready, for messages.
func podState(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, "; %s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			fmt.Fprintf(&b, "; %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, "; %s restarted %d times", cs.Name, cs.RestartCount)
		}
	}
	return b.String()
}

// metricsURL is the /metrics URL of a pod at its pod IP.
func metricsURL(p *corev1.Pod) string {
	return fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, metricsPort(p))
}

// metricsPort is the pod's container port named metrics.
func metricsPort(p *corev1.Pod) int32 {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == "metrics" {
				return port.ContainerPort
			}
		}
	}
	return 0
}

// configuredResources returns the resources in the exporter config that r
// renders, as plural.group names.
func (s *clusterSuite) configuredResources(t *testing.T, r helmRelease) []string {
	t.Helper()
	m, err := chart.Template(s.opts(r))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range m.OfKind("ConfigMap") {
		if !strings.HasSuffix(u.GetName(), "-config") {
			continue
		}
		var cm corev1.ConfigMap
		if err := chart.Into(u, &cm); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Resources []any `json:"resources"`
		}
		if err := sigsyaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range cfg.Resources {
			switch v := r.(type) {
			case string:
				out = append(out, v)
			case map[string]any:
				out = append(out, fmt.Sprint(v["name"]))
			}
		}
		return out
	}
	t.Fatal("no exporter config rendered")
	return nil
}

// waitSynced waits until the pod's exporter reports every resource synced.
func waitSynced(t *testing.T, p *corev1.Pod, resources []string) testenv.Metrics {
	t.Helper()
	var last testenv.Metrics
	testenv.WaitFor(t, syncTimeout, "every resource synced in pod "+p.Name, func() (bool, error) {
		m, err := testenv.Scrape(metricsURL(p))
		if err != nil {
			return false, err
		}
		last = m
		for _, r := range resources {
			if v, _ := m.Value(metricSynced, map[string]string{labelResource: r}); v != 1 {
				return false, fmt.Errorf("%s not synced", r)
			}
		}
		return true, nil
	})
	return last
}

// clientWithQPS is an admin client for bulk writes, beyond client-go's
// default 5 requests per second.
func (s *clusterSuite) clientWithQPS(t *testing.T, qps float32) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(s.c.Config)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// operatorObject gets a ServiceMonitor or PrometheusRule of the cluster,
// strictly decoded.
func (s *clusterSuite) operatorObject(t *testing.T, resource, ns, name string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := s.dyn.Resource(schema.GroupVersionResource{Group: monv1.SchemeGroupVersion.Group, Version: "v1", Resource: resource}).
		Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := chart.Into(u, into); err != nil {
		t.Fatal(err)
	}
}

// dumpRelease logs, on failure, the state and logs of r's pods and the
// tails of the node's logs when the test ends (see describeFailure).
func (s *clusterSuite) dumpRelease(t *testing.T, r helmRelease) {
	t.Helper()
	t.Cleanup(func() { s.describeFailure(t, r) })
}

// describeFailure logs, once per test and release and only if t failed,
// the state and logs of r's pods, the release's events and the tails of
// the node's logs. A test that uninstalls r itself calls it first: the
// pods' logs go with them.
func (s *clusterSuite) describeFailure(t *testing.T, r helmRelease) {
	if !t.Failed() {
		return
	}
	key := t.Name() + "/" + r.name
	s.mu.Lock()
	done := s.described[key]
	if s.described == nil {
		s.described = map[string]bool{}
	}
	s.described[key] = true
	s.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, _ := s.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		t.Logf("pod %s: %s", p.Name, podState(&p))
		for _, previous := range []bool{false, true} {
			b, err := s.client.CoreV1().Pods(r.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous, TailLines: ptr(int64(60))}).Do(ctx).Raw()
			if err == nil && len(b) > 0 {
				t.Logf("logs of %s (previous %v):\n%s", p.Name, previous, b)
			}
		}
	}
	events, _ := s.client.CoreV1().Events(r.namespace).List(ctx, metav1.ListOptions{})
	for _, e := range events.Items {
		t.Logf("event %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	for _, c := range []string{"kubelet", "containerd", "kube-controller-manager"} {
		t.Logf("tail of %s.log:\n%s", c, testenv.Tail(filepath.Join(s.logDir, c+".log"), 20))
	}
}

func ptr[T any](v T) *T { return &v }

// endpointAddresses returns the ready address:port pairs of a Service's
// EndpointSlices for its port named port.
func (s *clusterSuite) endpointAddresses(ctx context.Context, ns, service, port string) ([]string, error) {
	slices, err := s.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sl := range slices.Items {
		for _, p := range sl.Ports {
			if p.Name == nil || *p.Name != port || p.Port == nil {
				continue
			}
			for _, ep := range sl.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					for _, a := range ep.Addresses {
						out = append(out, fmt.Sprintf("%s:%d", a, *p.Port))
					}
				}
			}
		}
	}
	return out, nil
}

// deploymentAvailable reports whether d rolled out completely.
func deploymentAvailable(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation || d.Spec.Replicas == nil {
		return false
	}
	want := *d.Spec.Replicas
	if d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want || d.Status.Replicas != want {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
