//go:build integration

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// The busy cluster: every write goes to one watched resource (configmaps),
// every other watched resource stays idle, so the cluster's revision runs
// at busyRate while the idle resources' caches miss nothing.
const (
	busyRate      = 200 // writes/s; what this 2-core machine sustains beside the other suites
	busyObjects   = 200
	busyNamespace = "busy"
	// stallPageBound is README's bound for a RvsyncWatchStalled page:
	// silence above three bookmark periods (~180s) held for 2m, a scrape and
	// an evaluation, Alertmanager's group wait (30s, the shipped routing's),
	// and 15s for a loaded machine. A busy resource's silence starts with
	// the stall, so its page comes at no less than 5m30s.
	stallPageBound = 3*time.Minute + 2*time.Minute + 2*busyScrape + 30*time.Second + 15*time.Second
	// busyScrape is the scrape and rule-evaluation interval.
	busyScrape = 5 * time.Second
)

// clusterReads is the cluster label of the chart's exporter in the busy
// scenario; clusterHTTP1, of the exporter beside it on HTTP/1.1 (on
// several API servers only).
const (
	clusterReads = "busy"
	clusterHTTP1 = "busy-http1"
)

// noReadsResources are what the exporter without freshness reads watches:
// idle resources the chart's exporter does not watch, so its freshness
// reads (which make the API server's watch cache of a resource catch up
// with etcd) do not freshen these.
var noReadsResources = []string{
	"limitranges", "resourcequotas", "podtemplates", "replicationcontrollers",
	"ingresses.networking.k8s.io", "roles.rbac.authorization.k8s.io",
	"cronjobs.batch", "horizontalpodautoscalers.autoscaling",
}

// busyWindow is how long the healthy busy cluster is watched after a fresh
// start: in the soak (make test-soak) 10 minutes, in the gate (make test) 2,
// which still holds two cadences of an idle resource's freshness reads
// (~60-75 s) on etcd's 10-minute progress-notify interval.
func busyWindow() time.Duration { return testenv.Length(2*time.Minute, 10*time.Minute) }

// busyProgress is the etcd progress-notify intervals the busy scenario runs
// on, each on a stack of its own: in the soak etcd's default 10 minutes and
// kubeadm's 5 s, in the gate the default alone, where an idle resource's
// freshness rests on the exporter's freshness reads, not on etcd.
func busyProgress() []string {
	if testenv.Soak() {
		return []string{"10m", "5s"}
	}
	return []string{"10m"}
}

// TestBusyCluster: in a busy cluster (busyRate writes/s to configmaps, every
// other watched resource idle), with the generated rules at their real
// windows on a real Prometheus and Alertmanager, on etcd's default 10-minute
// progress-notify interval and on kubeadm's 5s: after a fresh start no page
// fires and no SLO burns faster than its budget, idle resources show RV
// lag 0; then a stalled watch of an idle resource (namespaces) and of the
// busy one (configmaps) each page RvsyncWatchStalled within the README's
// bound, and resolve after the release. A second exporter, without
// freshness reads, watches other idle resources beside it: what the reads
// buy shows in the staleness both reach, which the test logs.
func TestBusyCluster(t *testing.T) {
	t.Parallel()
	for _, progress := range busyProgress() {
		t.Run("etcd_progress_notify_"+progress, func(t *testing.T) {
			t.Parallel()
			runBusy(t, testenv.Options{EtcdArgs: map[string]string{"watch-progress-notify-interval": progress}})
		})
	}
}

// busyStack is one busy cluster: control plane, stall proxy, two
// exporters (three on several API servers), Prometheus, Alertmanager and
// its webhook.
type busyStack struct {
	*stack
	proxy   *faultproxy.APIProxy
	noReads *testenv.Exporter
	// http1 is the chart's exporter again on HTTP/1.1 (DISABLE_HTTP2),
	// straight through the balancer, when the control plane has several
	// API servers (nil otherwise): each of its watches and reads takes a
	// connection of its own, which the balancer may place on any server,
	// so a freshness read need not reach the server of its watch. Its
	// idle resources must read as the HTTP/2 exporter's do (RV lag 0 or
	// unknown, no burn, no page): issue #39's first premise on real parts.
	http1 *testenv.Exporter
}

// runBusy runs the busy scenario on a control plane started with opts.
func runBusy(t *testing.T, opts testenv.Options) {
	b := startBusy(t, opts)
	window := busyWindow()

	// Phase 1: a fresh start in a busy cluster, watched for the window.
	b.waitMetrics(t, 3*time.Minute, "every informer synced", b.allSynced)
	if b.http1 != nil {
		testenv.WaitFor(t, 3*time.Minute, "every informer of the HTTP/1.1 exporter synced", func() (bool, error) {
			m, err := testenv.Scrape(b.http1.MetricsURL())
			return err == nil && b.allSynced(m), err
		})
	}
	started := time.Now()
	t.Logf("watching a healthy busy cluster for %v", window)
	noReadsMax := 0.0
	for time.Since(started) < window {
		time.Sleep(15 * time.Second)
		noReadsMax = max(noReadsMax, b.noReadsStaleness(t))
		if burn := b.maxBurn(t); burn > 1 {
			t.Errorf("%v after the start: an SLO burns %.2fx its budget in a healthy cluster", time.Since(started).Round(time.Second), burn)
		}
		if lag, which := b.maxIdleLag(t); lag > 0 {
			t.Errorf("%v after the start: an idle resource shows RV lag %v in a busy cluster (%s)", time.Since(started).Round(time.Second), lag, which)
		}
	}
	b.assertNoPage(t, started.Add(-time.Hour))
	b.logStaleness(t, window)
	t.Logf("without freshness reads, idle resources' highest staleness: %.0fs", noReadsMax)

	// Phase 2: the watches of an idle and of the busy resource stall.
	stalled := time.Now()
	b.proxy.StallWatchesOf("namespaces", "configmaps")
	released := false
	t.Cleanup(func() {
		if !released {
			b.proxy.Release()
		}
	})
	var pages []notifiedAlert
	for _, r := range []string{"namespaces", "configmaps"} {
		page := b.hook.wait(t, stallPageBound+time.Minute, "a "+alerts.AlertWatchStalled+" page for "+r, func(a notifiedAlert) bool {
			return a.Status == "firing" && a.Labels["alertname"] == alerts.AlertWatchStalled &&
				a.Labels[catalog.LabelResource] == r && a.Labels["cluster"] == clusterReads && a.StartsAt.After(stalled)
		})
		after := page.Received.Sub(stalled)
		t.Logf("%s (%s): paged %v after the stall: %s", r, map[string]string{"namespaces": "idle", "configmaps": "busy"}[r], after.Round(time.Second), page)
		if after > stallPageBound {
			t.Errorf("%s paged %v after the stall; README's bound is %v", r, after.Round(time.Second), stallPageBound)
		}
		pages = append(pages, page)
	}
	releasedAt := time.Now()
	b.proxy.Release()
	released = true
	for _, p := range pages {
		b.waitResolved(t, p, releasedAt)
	}
}

func startBusy(t *testing.T, opts testenv.Options) *busyStack {
	t.Helper()
	s := &stack{spec: slo.DefaultSpec(), logDir: t.TempDir(), start: time.Now()}
	opts.LogDir = s.logDir
	s.env = testenv.StartT(t, opts)
	file, sa := s.applyChart(t, nil) // the chart's defaults: 5s probes, a 10s canary
	token := saToken(t, s.env.Client, sa)
	proxy, informer := apiProxy(t, s.env.Config, token)
	direct := rest.CopyConfig(s.env.Config)
	direct.CertData, direct.KeyData, direct.BearerToken = nil, nil, token

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.EnsureNamespace(ctx, s.env.Client, busyNamespace); err != nil {
		t.Fatal(err)
	}
	writer := rest.CopyConfig(s.env.Config)
	writer.QPS, writer.Burst = 2*busyRate, 2*busyRate
	go testenv.Churn(ctx, kubernetes.NewForConfigOrDie(writer), busyNamespace, busyObjects, busyRate)

	s.exporter = testenv.StartExporterT(t, testenv.ExporterOptions{
		Config: file, Informer: informer, Probe: direct,
		Env: []string{"POD_NAME=" + podName, "POD_NAMESPACE=" + namespace},
		Log: logFile(t, s.logDir, "exporter.log"),
	})
	noReads := testenv.StartExporterT(t, testenv.ExporterOptions{
		Config:   []byte("resources: [" + strings.Join(noReadsResources, ", ") + "]\n"),
		Informer: s.env.Config, Args: []string{"--freshness-reads=false"},
		Log: logFile(t, s.logDir, "exporter-no-reads.log"),
	})
	target := func(addr, cluster string) map[string]any {
		return map[string]any{"targets": []string{addr}, "labels": map[string]string{"cluster": cluster}}
	}
	targets := []any{target(s.exporter.Addr, clusterReads)}
	var http1 *testenv.Exporter
	if opts.APIServers > 1 {
		http1 = testenv.StartExporterT(t, testenv.ExporterOptions{
			Config: file, Informer: direct, Probe: direct,
			Env: []string{"POD_NAME=" + podName + "-http1", "POD_NAMESPACE=" + namespace, "DISABLE_HTTP2=1"},
			Log: logFile(t, s.logDir, "exporter-http1.log"),
		})
		targets = append(targets, target(http1.Addr, clusterHTTP1))
	}
	s.hook = startWebhook(t)
	am := startAlertmanager(t, s.logDir, s.hook.srv.URL)
	rules, err := alerts.Render(s.spec)
	if err != nil {
		t.Fatal(err)
	}
	s.prom = startPrometheusWith(t, s.logDir, prometheusOptions{
		rules: rules, alertmanager: am, interval: busyScrape,
		scrapeConfigs: []any{map[string]any{
			"job_name":       scrapeJob,
			"static_configs": targets,
		}},
	})
	t.Cleanup(func() {
		if t.Failed() {
			s.dump(t)
		}
	})
	return &busyStack{stack: s, proxy: proxy, noReads: noReads, http1: http1}
}

// saToken returns a token of the chart's ServiceAccount: the exporter's
// credentials, which the stall proxy forwards (a client certificate could
// not pass a proxy that terminates TLS).
func saToken(t *testing.T, c kubernetes.Interface, sa string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3 * 3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// apiProxy starts a stall proxy in front of the API server of cfg, and
// returns it with a client configuration reaching the API server through
// it as token.
func apiProxy(t *testing.T, cfg *rest.Config, token string) (*faultproxy.APIProxy, *rest.Config) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	cas := x509.NewCertPool()
	cas.AppendCertsFromPEM(cfg.CAData)
	p, err := faultproxy.StartAPIProxy("127.0.0.1:0", upstream, cas, serving)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, &rest.Config{Host: "https://" + p.Addr(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: certPEM}}
}

// maxBurn is the highest burn rate of any SLO of any resource over its
// shortest window, or 0 before the rules recorded any.
func (b *busyStack) maxBurn(t *testing.T) float64 {
	t.Helper()
	q := fmt.Sprintf("max(%s / on (cluster, resource, slo) group_left () (1 - %s))", slo.ErrorRatioRule("5m"), slo.RuleObjective)
	return b.scalar(t, q)
}

// notIdle are the watched resources something writes: the busy one, and
// leases, which kube-apiserver renews every 10 s (its identity lease): a
// renewal delivered after a head sample taken after its commit measures
// one or more revisions behind, honestly, until the next proof.
const notIdle = `configmaps|leases.coordination.k8s.io`

// maxIdleLag is the highest RV lag of the resources nobody writes, and
// what the exporter said of that resource then (its head, informer RV and
// state), for the failure's message.
func (b *busyStack) maxIdleLag(t *testing.T) (float64, string) {
	t.Helper()
	v, err := b.prom.query(fmt.Sprintf(`topk(1, %s{resource!~%q})`, catalog.ResourceVersionLag.Name, notIdle))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 || v[0].Value == 0 {
		return 0, ""
	}
	res, cluster := string(v[0].Metric["resource"]), string(v[0].Metric["cluster"])
	said := []string{"cluster " + cluster, "resource " + res}
	for _, name := range []string{catalog.HeadResourceVersion.Name, catalog.InformerResourceVersion.Name, catalog.FreshnessProofPeriod.Name, catalog.CacheStaleness.Name} {
		if w, err := b.prom.query(fmt.Sprintf(`%s{cluster=%q,resource=%q}`, name, cluster, res)); err == nil && len(w) > 0 {
			said = append(said, fmt.Sprintf("%s %v", name, w[0].Value))
		}
	}
	if w, err := b.prom.query(fmt.Sprintf(`%s{cluster=%q,resource=%q} == 1`, catalog.ResourceState.Name, cluster, res)); err == nil && len(w) > 0 {
		said = append(said, "state "+string(w[0].Metric["state"]))
	}
	return float64(v[0].Value), strings.Join(said, ", ")
}

func (b *busyStack) scalar(t *testing.T, q string) float64 {
	t.Helper()
	v, err := b.prom.query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if len(v) == 0 {
		return 0
	}
	return float64(v[0].Value)
}

// logStaleness logs, per exporter, the idle resources' highest staleness
// and freshness proof period over the window: what the freshness reads buy.
func (b *busyStack) logStaleness(t *testing.T, window time.Duration) {
	t.Helper()
	rng := model.Duration(window).String()
	for _, q := range []string{
		fmt.Sprintf(`max by (cluster) (max_over_time(%s{resource!~"configmaps"}[%s]))`, catalog.CacheStaleness.Name, rng),
		fmt.Sprintf(`max by (cluster) (max_over_time(%s{resource!~"configmaps"}[%s]))`, catalog.FreshnessProofPeriod.Name, rng),
		fmt.Sprintf(`sum by (cluster) (increase(%s{kind="probe"}[%s]))`, catalog.ListDuration.Name+"_count", rng),
	} {
		v, err := b.prom.query(q)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, s := range v {
			parts = append(parts, fmt.Sprintf("%s=%.0f", s.Metric["cluster"], float64(s.Value)))
		}
		t.Logf("%s: %s", q, strings.Join(parts, ", "))
	}
}

// noReadsStaleness is the highest staleness of the idle resources the
// exporter without freshness reads watches, now.
func (b *busyStack) noReadsStaleness(t *testing.T) float64 {
	t.Helper()
	m, err := testenv.Scrape(b.noReads.MetricsURL())
	if err != nil {
		t.Fatalf("scrape the exporter without freshness reads: %v", err)
	}
	high := 0.0
	for _, r := range noReadsResources {
		if v, ok := m.Value(catalog.CacheStaleness.Name, map[string]string{catalog.LabelResource: r}); ok {
			high = max(high, v)
		}
	}
	return high
}
