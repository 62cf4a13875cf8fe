//go:build integration

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/lb"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// haServers is the number of kube-apiservers of the HA control plane.
const haServers = 3

// TestHABusyCluster is the busy scenario (TestBusyCluster) on an HA
// control plane: three kube-apiservers on one etcd behind the round-robin
// balancer, which the exporters, the workload's 200 writes/s and the stall
// proxy all go through; beside the chart's exporter, the same on HTTP/1.1,
// its connections spread over the servers (busyStack.http1). No page,
// idle RV lag 0 on both, and the stalled watches page within the README's
// bound. A soak (make test-soak, 10-minute window);
// the gate's proof of the busy cluster is TestBusyCluster.
func TestHABusyCluster(t *testing.T) {
	testenv.RequireSoak(t, "TestBusyCluster (one API server)")
	t.Parallel()
	runBusy(t, testenv.Options{APIServers: haServers, EtcdArgs: map[string]string{"watch-progress-notify-interval": "10m"}})
}

// TestHA: an HA control plane as production runs it, three kube-apiservers
// on a three-member etcd behind a round-robin TCP balancer that pins each
// connection, with the chart's RBAC, a workload and the generated rules in
// a real Prometheus and Alertmanager (windows scaled as in TestEndToEnd).
// Each scenario runs exporters and a Prometheus of its own (its alerts
// carry the scenario as their cluster), which scrapes every API server's
// own /metrics too (job apiserver, as kube-prometheus-stack does), so
// that the stage rules say where a delay is, on both of the exporter's
// connection policies (client-go's default HTTP/2, one connection for
// every informer, and DISABLE_HTTP2's HTTP/1.1, one for each watch, which
// the balancer spreads), and judges them against what the test itself
// knows: which watches a stalled server holds (the stall
// proxy's open watches), which lists the exporter made (the API servers'
// audit logs), where each client was sent, which stretch a fault slowed
// (a server cut off etcd, the informers' network delayed: the stage
// the pages must name). A soak (make test-soak); the
// gate's proof of several API servers is TestCluster's rolling restart of
// three through the kubernetes Service.
func TestHA(t *testing.T) {
	testenv.RequireSoak(t, "TestCluster/ha_api_servers_rolling_restart_through_the_service")
	t.Parallel() // beside the other suites, on a stack of its own
	h := startHAStack(t)
	t.Run("one_server_watch_cache_stalls", h.serverStall)
	t.Run("rolling_restart_no_false_page", h.rollingRestart)
	t.Run("probe_reads_and_informers_on_different_servers", h.spread)
	t.Run("informers_connection_delayed", h.informersDelayed)
	t.Run("one_server_loses_etcd", h.serverLosesEtcd)
}

// haStack is the HA control plane and what every scenario shares. Every
// API server reaches etcd through proxies of its own
// (Options.EtcdProxies), so that one can lose etcd alone.
type haStack struct {
	*stack
	config []byte       // the exporter's config file, as the chart renders it
	sa     string       // the chart's ServiceAccount user name
	token  *rest.Config // the chart's ServiceAccount through the balancer, by token (audited)
	asSA   *rest.Config // the same by impersonation from the admin (not audited: the audit policy names the user authenticated)
	am     string       // Alertmanager's host:port
	audit  string       // server 0's audit log (AuditLog names the others')
	admin  scrapeTLS    // the admin's credentials, as files a scrape reads
}

func startHAStack(t *testing.T) *haStack {
	t.Helper()
	s := &stack{spec: testSpec(), logDir: t.TempDir(), start: time.Now()}
	audit := filepath.Join(t.TempDir(), "audit.log")
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	// the exporter's lists and watches, and nothing else
	user := "system:serviceaccount:" + namespace + ":" + release + "-rvsync-slo"
	writeYAML(t, policy, map[string]any{
		"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
		"omitStages": []string{"RequestReceived"},
		"rules": []any{
			map[string]any{"level": "Metadata", "users": []string{user}, "verbs": []string{"list", "watch"}},
			map[string]any{"level": "None"},
		},
	})
	s.env = testenv.StartT(t, testenv.Options{
		APIServers: haServers, EtcdMembers: 3, EtcdProxies: true, LogDir: s.logDir,
		APIServerArgs: map[string]string{"audit-policy-file": policy, "audit-log-path": audit},
	})
	file, asSA := s.installChart(t, nil)
	if got := asSA.Impersonate.UserName; got != user {
		t.Fatalf("the chart's ServiceAccount is %s, the audit policy's %s", got, user)
	}
	token := rest.AnonymousClientConfig(s.env.Config)
	token.BearerToken = saToken(t, s.env.Client, strings.TrimPrefix(user, "system:serviceaccount:"+namespace+":"))

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.EnsureNamespace(ctx, s.env.Client, workloadNamespace); err != nil {
		t.Fatal(err)
	}
	go testenv.Churn(ctx, s.env.Client, workloadNamespace, churnObjects, churnRate)
	go converge(ctx, s.env.Client, workloadNamespace, 3, convergeEvery)
	s.hook = startWebhook(t)
	return &haStack{stack: s, config: file, sa: user, token: token, asSA: asSA, am: startAlertmanager(t, s.logDir, s.hook.srv.URL), audit: audit,
		admin: writeScrapeTLS(t, s.env.Config)}
}

// scrapeTLS is a scrape's tls_config: files of the API servers' CA and of
// a client certificate and key.
type scrapeTLS map[string]string

// writeScrapeTLS writes cfg's CA and client certificate (the admin's,
// system:masters, which may GET /metrics) as files for a scrape.
func writeScrapeTLS(t *testing.T, cfg *rest.Config) scrapeTLS {
	t.Helper()
	if len(cfg.CAData) == 0 || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		t.Fatal("the admin's configuration has no CA or client certificate to scrape the API servers with")
	}
	dir := t.TempDir()
	out := scrapeTLS{}
	for key, data := range map[string][]byte{"ca_file": cfg.CAData, "cert_file": cfg.CertData, "key_file": cfg.KeyData} {
		path := filepath.Join(dir, key)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out[key] = path
	}
	return out
}

// apiServerScrapeInterval is the interval and timeout of the API servers'
// scrape: one cut off etcd answers /metrics after about 1 s on 1.37.2
// (docs/testing.md), so the test's 1 s would lose its series as it
// stalls; on 1.34.4 it takes 20 s, and this loses them (as
// kube-prometheus-stack's 10 s default timeout does).
const apiServerScrapeInterval = 3 * time.Second

// apiServerScrape scrapes every API server's own /metrics directly, as
// kube-prometheus-stack does (job apiserver, instance each server's
// host:port), once for each cluster label of clusters, so that the stage
// rules join them with the exporters' series of that cluster. It keeps
// the families the stage rules read (slo.APIServerSeries), not the
// thousands of others, on a machine the test shares.
func (h *haStack) apiServerScrape(clusters ...string) map[string]any {
	var groups []any
	for _, c := range clusters {
		var targets []string
		for _, s := range h.env.HA.Servers {
			targets = append(targets, serverInstance(s))
		}
		groups = append(groups, map[string]any{"targets": targets, "labels": map[string]string{"cluster": c}})
	}
	return map[string]any{
		"job_name":        h.spec.WithDefaults().APIServerJob,
		"scheme":          "https",
		"scrape_interval": model.Duration(apiServerScrapeInterval).String(),
		"scrape_timeout":  model.Duration(apiServerScrapeInterval).String(),
		"tls_config":      h.admin,
		"static_configs":  groups,
		"metric_relabel_configs": []any{map[string]any{
			"source_labels": []string{"__name__"}, "action": "keep", "regex": strings.Join(slo.APIServerSeries(), "|"),
		}},
	}
}

// serverInstance is the instance label of an API server's own scrape: its
// host:port.
func serverInstance(s *testenv.APIServer) string {
	u, err := url.Parse(s.Host)
	if err != nil {
		panic(err)
	}
	return u.Host
}

// haExporter is one exporter of a scenario and the cluster label its
// series and alerts carry.
type haExporter struct {
	cluster string
	*testenv.Exporter
}

// startExporter starts an exporter of the chart's config for a scenario,
// its informers (and freshness reads) reaching the API servers through
// informer, its head probe through probe; http1 turns HTTP/2 off in its
// client (DISABLE_HTTP2), so each watch and read takes a connection of its
// own, and the balancer spreads them.
func (h *haStack) startExporter(t *testing.T, cluster string, informer, probe *rest.Config, http1 bool) haExporter {
	t.Helper()
	env := []string{"POD_NAME=" + podName + "-" + cluster, "POD_NAMESPACE=" + namespace}
	if http1 {
		env = append(env, "DISABLE_HTTP2=1")
	}
	return haExporter{cluster: cluster, Exporter: testenv.StartExporterT(t, testenv.ExporterOptions{
		Config: h.config, Informer: informer, Probe: probe, Env: env,
		Log: logFile(t, h.logDir, "exporter-"+cluster+".log"),
	})}
}

// monitor starts a Prometheus with the stack's rules scraping the
// scenario's exporters, each target labelled with its cluster, and every
// API server for each of them (apiServerScrape), and waits until every
// informer synced, the rules recorded and every API server's watch cache
// series are in.
func (h *haStack) monitor(t *testing.T, exporters ...haExporter) *prometheusServer {
	t.Helper()
	return h.monitorWith(t, h.spec, exporters...)
}

// monitorWith is monitor with the rules of spec rather than the stack's.
func (h *haStack) monitorWith(t *testing.T, spec slo.Spec, exporters ...haExporter) *prometheusServer {
	t.Helper()
	rules, err := alerts.Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	var targets []any
	var clusters []string
	for _, e := range exporters {
		targets = append(targets, map[string]any{"targets": []string{e.Addr}, "labels": map[string]string{"cluster": e.cluster}})
		clusters = append(clusters, e.cluster)
	}
	p := startPrometheusWith(t, h.logDir, prometheusOptions{
		rules: rules, alertmanager: h.am, interval: scrapeInterval, name: "prometheus-" + exporters[0].cluster,
		scrapeConfigs: []any{map[string]any{"job_name": scrapeJob, "static_configs": targets}, h.apiServerScrape(clusters...)},
	})
	p.waitQuery(t, 3*time.Minute, fmt.Sprintf("count(%s == 1) == %d", catalog.InformerSynced.Name, len(exporters)*len(h.resources)))
	p.waitQuery(t, 2*time.Minute, slo.RuleObjective)
	p.waitQuery(t, 2*time.Minute, fmt.Sprintf(`count(count by (cluster, instance) (%s{job=%q})) == %d`,
		slo.APIServerWatchCacheRV, h.spec.WithDefaults().APIServerJob, len(exporters)*len(h.env.HA.Servers)))
	return p
}

// pages returns the pages of cluster notified since.
func (h *haStack) pages(cluster string, since time.Time) []notifiedAlert {
	var out []notifiedAlert
	for _, a := range h.hook.received() {
		if a.Status == "firing" && a.Labels["severity"] == slo.DefaultSeverityPage && a.Labels["cluster"] == cluster && a.StartsAt.After(since) {
			out = append(out, a)
		}
	}
	return out
}

// assertNoPageOf fails for every page of cluster notified since and every
// page alert of it pending or firing in p.
func (h *haStack) assertNoPageOf(t *testing.T, p *prometheusServer, cluster string, since time.Time) {
	t.Helper()
	for _, a := range h.pages(cluster, since) {
		t.Errorf("a page: %s", a)
	}
	as, err := p.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if string(a.Labels["severity"]) == slo.DefaultSeverityPage {
			t.Errorf("a %s page alert: %s", a.State, a.Labels)
		}
	}
}

// stallPath is a balancer whose first backend is server 0 seen through a
// watch-stall proxy: stalling the proxy freezes server 0's watch streams,
// its connections and every other request healthy, as when one API
// server's watch cache stops; servers 1 and 2 are reached as they are.
type stallPath struct {
	proxy    *faultproxy.APIProxy
	balancer *lb.Balancer
	config   *rest.Config // through the balancer, as the chart's ServiceAccount
}

func (h *haStack) stallPath(t *testing.T) stallPath {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	servers := h.env.HA.Servers
	upstream, err := url.Parse(servers[0].Host)
	if err != nil {
		t.Fatal(err)
	}
	cas := x509.NewCertPool()
	cas.AppendCertsFromPEM(h.env.Config.CAData)
	proxy, err := faultproxy.StartAPIProxy("127.0.0.1:0", upstream, cas, serving)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	backends := []string{proxy.Addr()}
	for _, s := range servers[1:] {
		u, _ := url.Parse(s.Host)
		backends = append(backends, u.Host)
	}
	b, err := lb.Start(backends...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	cfg := rest.CopyConfig(h.token)
	cfg.Host = "https://" + b.Addr()
	// the API servers' CA and the proxy's own certificate
	cfg.CAData = append(append([]byte{}, h.token.CAData...), certPEM...)
	return stallPath{proxy: proxy, balancer: b, config: cfg}
}

// serverStall: server 0's watch streams freeze while servers 1 and 2 stay
// healthy. An exporter on HTTP/1.1 has its watches spread over the three
// servers by the balancer; one on HTTP/2 (client-go's default) has every
// informer on its one connection, so on one server. Each reaches the
// servers through a balancer of its own whose first backend is server 0
// behind the stall proxy, so the proxy's open watches at the stall are the
// ground truth of which resources of which exporter are stalled. Exactly
// those page, within the bound of TestEndToEnd's stall (as
// RvsyncWatchStalled, or by a staleness burn: one held resource of the
// HTTP/1.1 exporter paged so in each of two runs of 2 December, its
// silence not explained yet, which the log then shows); a resource whose
// watch never touched server 0 during the stall pages nothing.
func (h *haStack) serverStall(t *testing.T) {
	h.scenario(t)
	paths := map[string]stallPath{"stall-http1": h.stallPath(t), "stall-http2": h.stallPath(t)}
	e1 := h.startExporter(t, "stall-http1", paths["stall-http1"].config, paths["stall-http1"].config, true)
	e2 := h.startExporter(t, "stall-http2", paths["stall-http2"].config, paths["stall-http2"].config, false)
	p := h.monitor(t, e1, e2)
	if n := paths["stall-http1"].proxy.Watches(); n == 0 {
		t.Fatal("no watch of the HTTP/1.1 exporter reached server 0: the balancer does not spread its watches")
	}

	stalled := time.Now()
	held := map[string]map[string]time.Time{} // cluster → resource → open since, at the stall
	for c, sp := range paths {
		held[c] = sp.proxy.OpenWatches()
		sp.proxy.StallWatches()
	}
	released := false
	release := func() {
		if !released {
			for _, sp := range paths {
				sp.proxy.Release()
			}
			released = true
		}
	}
	t.Cleanup(release)
	// resources whose watch reached server 0 at any time of the stall: a
	// watch restarted meanwhile may land there and be held from then on
	touched := map[string]map[string]bool{"stall-http1": {}, "stall-http2": {}}
	stopWatching := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for c, sp := range paths {
				for r := range sp.proxy.OpenWatches() {
					touched[c][r] = true
				}
			}
			select {
			case <-stopWatching:
				return
			case <-tick.C:
			}
		}
	}()
	stopTouched := func() {
		select {
		case <-stopWatching:
		default:
			close(stopWatching)
		}
		<-watching
	}
	t.Cleanup(stopTouched)
	want := map[string][]string{} // cluster → resources that must page
	for c, open := range held {
		for r, since := range open {
			if since.Before(stalled) {
				want[c] = append(want[c], r)
			}
		}
		slices.Sort(want[c])
		t.Logf("%s: watches held by server 0's stall: %v", c, want[c])
	}
	if len(want["stall-http1"]) == 0 || len(want["stall-http1"]) == len(h.resources) {
		t.Fatalf("the HTTP/1.1 exporter has %d of %d watches on server 0: the scenario needs some on it and some not", len(want["stall-http1"]), len(h.resources))
	}
	if n := len(want["stall-http2"]); n != 0 && n != len(h.resources) {
		t.Errorf("the HTTP/2 exporter has %d of %d watches on server 0: on one connection it should have all or none", n, len(h.resources))
	}

	// the stalled resources page, each within the bound: as a stalled
	// watch, or (counted and logged with the exporter's view of the
	// watch) by a burn alone
	const bound = 5 * time.Minute // TestEndToEnd's for a stall
	exporters := map[string]haExporter{e1.cluster: e1, e2.cluster: e2}
	var pagedAfter []time.Duration
	for c, rs := range want {
		for _, r := range rs {
			label := pluralOf(r, h.resources)
			page := h.hook.wait(t, bound, fmt.Sprintf("a page for %s of %s", r, c), func(a notifiedAlert) bool {
				return a.Status == "firing" && a.Labels["severity"] == "critical" &&
					a.Labels[catalog.LabelResource] == label && a.Labels["cluster"] == c && a.StartsAt.After(stalled)
			})
			pagedAfter = append(pagedAfter, page.Received.Sub(stalled))
			if page.Labels["alertname"] != alerts.AlertWatchStalled {
				t.Logf("%s of %s paged %s %v after the stall, not (yet) %s; the exporter: %s", r, c, page.Labels["alertname"],
					page.Received.Sub(stalled).Round(time.Second), alerts.AlertWatchStalled, watchView(exporters[c], label))
			}
		}
	}
	stopTouched()
	slices.Sort(pagedAfter)
	if len(pagedAfter) > 0 {
		t.Logf("%d stalled resources paged %v–%v after the stall", len(pagedAfter), pagedAfter[0].Round(time.Second), pagedAfter[len(pagedAfter)-1].Round(time.Second))
	}
	// nothing else paged: no resource whose watch was never held
	for c := range paths {
		for _, a := range h.pages(c, stalled) {
			if r := a.Labels[catalog.LabelResource]; r != "" && !touched[c][watchedName(r)] {
				t.Errorf("%s of %s paged, its watch never on the stalled server: %s", r, c, a)
			}
		}
	}
	release()
	as, err := p.alerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d alerts pending or firing in Prometheus at the release", len(as))
}

// pluralOf returns the `resource` label value (plural.group) of a watched
// resource named by its plural, as the stall proxy names it.
func pluralOf(plural string, resources []string) string {
	for _, r := range resources {
		if watchedName(r) == plural {
			return r
		}
	}
	return plural
}

// watchedName is the plural of a `resource` label value (plural.group).
func watchedName(resource string) string {
	p, _, _ := strings.Cut(resource, ".")
	return p
}

// rollingRestart: the three servers restart one after the other as an
// upgrade does (out of the balancer's rotation, SIGTERM, started again,
// ready, back in rotation), an exporter reaching them through the
// balancer, once on client-go's default HTTP/2 (every informer on one
// connection, so all move at once) and once on HTTP/1.1 (each watch on a
// connection of its own, spread over the servers, so each restart moves
// only the watches it held, and a moved one may land on a server
// restarted just before). No page; every informer's watch moves off the
// server it was on; every relist the exporter counts is one the API
// servers' audit logs show it made (a watch-list or a List), and every one
// they show is counted. The audit logs name the chart's ServiceAccount,
// not the exporter, so the two run one after the other, each exporter
// stopped (its subtest's cleanup) before the next starts: their windows
// cannot overlap.
func (h *haStack) rollingRestart(t *testing.T) {
	for _, policy := range []struct {
		name  string
		http1 bool
	}{{"http2", false}, {"http1", true}} {
		t.Run(policy.name, func(t *testing.T) {
			h.scenario(t)
			e := h.startExporter(t, "rolling-"+policy.name, h.token, h.token, policy.http1)
			p := h.monitor(t, e)
			before, err := testenv.Scrape(e.MetricsURL())
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			for i, s := range h.env.HA.Servers {
				open := s.Backend.Open()
				restarted := time.Now()
				if err := h.env.HA.Restart(ctx, i); err != nil {
					t.Fatalf("restart %s: %v", s.Name, err)
				}
				t.Logf("%s back after %v (it had %d connections of the balancer)", s.Name, time.Since(restarted).Round(time.Second), open)
				h.waitFreshAll(t, e, time.Now())
			}
			ended := time.Now()
			after, err := testenv.Scrape(e.MetricsURL())
			if err != nil {
				t.Fatal(err)
			}
			truth := h.relistsInAudit(t, began, ended)
			var starts, counted, made float64
			for _, r := range h.resources {
				// per resource, not in sum: on HTTP/1.1 the watches move
				// one by one, and one moved twice would hide one never moved
				moved := after.Sum(catalog.WatchStarts.Name, res(r)) - before.Sum(catalog.WatchStarts.Name, res(r))
				starts += moved
				if moved == 0 {
					t.Errorf("%s: no watch start over the rolling restart: its watch must have moved off the server that stopped", r)
				}
				got := after.Sum(catalog.Relists.Name, res(r)) - before.Sum(catalog.Relists.Name, res(r))
				counted += got
				made += float64(truth[r])
				if got != float64(truth[r]) {
					t.Errorf("%s: %v relists counted over the rolling restart, the audit logs show %d", r, got, truth[r])
				}
			}
			t.Logf("rolling restart of %d servers: %v watch starts, %v relists counted, %v in the audit logs", haServers, starts, counted, made)
			if n := after.Sum(catalog.ResourceVersionRegressions.Name, nil); n != 0 {
				t.Errorf("%v RV regressions in a rolling restart", n)
			}
			h.assertNoPageOf(t, p, e.cluster, began)
		})
	}
}

// waitFreshAll waits until every resource of e proved itself fresh after
// since (staleness below the time since then).
func (h *haStack) waitFreshAll(t *testing.T, e haExporter, since time.Time) {
	t.Helper()
	testenv.WaitFor(t, 3*time.Minute, "every resource fresh again", func() (bool, error) {
		m, err := testenv.Scrape(e.MetricsURL())
		if err != nil {
			return false, err
		}
		for _, r := range h.resources {
			v, ok := m.Value(catalog.CacheStaleness.Name, res(r))
			if !ok || v > time.Since(since).Seconds() {
				return false, fmt.Errorf("%s: staleness %v (known %v)", r, v, ok)
			}
		}
		return true, nil
	})
}

// auditEvent is the part of a kube-apiserver audit event the test reads.
type auditEvent struct {
	Stage          string    `json:"stage"`
	Verb           string    `json:"verb"`
	RequestURI     string    `json:"requestURI"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	User           struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource string `json:"resource"`
		APIGroup string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditEvents reads every server's audit log.
func (h *haStack) auditEvents(t *testing.T) map[int][]auditEvent {
	t.Helper()
	out := map[int][]auditEvent{}
	for i := range h.env.HA.Servers {
		f, err := os.Open(testenv.AuditLog(h.audit, i))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e auditEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			if e.User.Username == h.sa && e.ObjectRef != nil {
				out[i] = append(out[i], e)
			}
		}
		f.Close()
	}
	return out
}

// resourceOf is the `resource` label value of an audited request.
func (e auditEvent) resourceOf() string {
	return catalog.ResourceValue(e.ObjectRef.APIGroup, e.ObjectRef.Resource)
}

// query returns the request's query parameters.
func (e auditEvent) query() url.Values {
	u, err := url.Parse(e.RequestURI)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

// relistsInAudit counts, per resource, the full lists the exporter's
// informers began between from and to on any server: watch-lists (a watch
// with sendInitialEvents=true, answered) and first pages of Lists that are
// not limit=1 (head probes and freshness reads are).
func (h *haStack) relistsInAudit(t *testing.T, from, to time.Time) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, evs := range h.auditEvents(t) {
		for _, e := range evs {
			if e.StageTimestamp.Before(from) || e.StageTimestamp.After(to) {
				continue
			}
			q := e.query()
			switch {
			case e.Verb == "watch" && e.Stage == "ResponseStarted" && q.Get("sendInitialEvents") == "true":
			case e.Verb == "list" && e.Stage == "ResponseComplete" && q.Get("limit") != "1" && q.Get("continue") == "" &&
				e.ResponseStatus != nil && e.ResponseStatus.Code == 200:
			default:
				continue
			}
			out[e.resourceOf()]++
		}
	}
	return out
}

// spread: the head probe, the freshness reads and the informers on
// different servers. One exporter has its informers (and so its freshness
// reads, on their connection) on server 0 and its head probe on server 1,
// each forced by a direct address; another runs on HTTP/1.1 through the
// balancer with its head probe on server 2, so each freshness read takes
// whichever server the balancer gives it, mostly not the one of the watch
// it is meant to refresh (the audit logs show where each went). Caches,
// heads and reads from different watch caches must still add up: no page,
// no staleness SLI burning, and every resource's staleness within its
// freshness proof period plus the SLI's threshold.
func (h *haStack) spread(t *testing.T) {
	h.scenario(t)
	ha := h.env.HA
	forced := h.startExporter(t, "forced", ha.Direct(h.asSA, 0), ha.Direct(h.asSA, 1), false)
	spread := h.startExporter(t, "spread", h.token, ha.Direct(h.token, 2), true)
	p := h.monitor(t, forced, spread)
	began := time.Now()
	const hold = 4 * time.Minute // several bookmark periods of every quiet resource
	t.Logf("holding for %v", hold)
	time.Sleep(hold) // the condition under test is that nothing happens
	ended := time.Now()

	// where the spread exporter's freshness reads went (its lists with
	// limit=1 on servers 0 and 1: its head probe goes to server 2), against
	// the server of the watch they were meant to refresh; only its requests
	// are audited (the forced exporter's user is the admin impersonating)
	type at struct {
		server int
		e      auditEvent
	}
	var all []at
	for i, es := range h.auditEvents(t) {
		for _, e := range es {
			if e.StageTimestamp.Before(ended) {
				all = append(all, at{i, e})
			}
		}
	}
	slices.SortFunc(all, func(a, b at) int { return a.e.StageTimestamp.Compare(b.e.StageTimestamp) })
	watchOn := map[string]int{} // resource → server of its latest watch
	reads := map[bool]int{}     // on the watch's server or not
	for _, a := range all {
		r := a.e.resourceOf()
		switch {
		case a.e.Verb == "watch" && a.e.Stage == "ResponseStarted":
			watchOn[r] = a.server
		case a.e.Verb == "list" && a.e.Stage == "ResponseComplete" && a.e.query().Get("limit") == "1" && a.server != 2 && a.e.StageTimestamp.After(began):
			if w, ok := watchOn[r]; ok {
				reads[w == a.server]++
			}
		}
	}
	t.Logf("the spread exporter's freshness reads on servers 0 and 1: %d on their watch's server, %d on another", reads[true], reads[false])
	if reads[false] == 0 {
		t.Errorf("no freshness read reached another server than its watch's: the scenario forced nothing")
	}

	for _, e := range []haExporter{forced, spread} {
		rng := promRange(ended.Sub(began))
		stale := h.maxBy(t, p, fmt.Sprintf(`max by (resource) (max_over_time(%s{cluster=%q}[%s]))`, catalog.CacheStaleness.Name, e.cluster, rng))
		proof := h.maxBy(t, p, fmt.Sprintf(`max by (resource) (max_over_time(%s{cluster=%q}[%s]))`, catalog.FreshnessProofPeriod.Name, e.cluster, rng))
		high, highProof := 0.0, 0.0
		for r, s := range stale {
			high, highProof = max(high, s), max(highProof, proof[r])
			if limit := max(proof[r], bookmarkPeriodSeconds) + float64(slo.DefaultStalenessThresholdSeconds); s > limit {
				t.Errorf("%s %s: staleness reached %.0fs, above its proof period %.0fs plus the %ds threshold", e.cluster, r, s, proof[r], slo.DefaultStalenessThresholdSeconds)
			}
		}
		t.Logf("%s: highest staleness %.0fs, highest proof period %.0fs over %v", e.cluster, high, highProof, hold)
		h.assertNoPageOf(t, p, e.cluster, began)
	}
}

// bookmarkPeriodSeconds is kube-apiserver's bookmark period: a quiet
// resource's staleness saws up to about it before a proof period is known.
const bookmarkPeriodSeconds = 60

// promRange renders a duration as a PromQL range.
func promRange(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// maxBy runs q, which yields one series per resource, and returns its values.
func (h *haStack) maxBy(t *testing.T, p *prometheusServer, q string) map[string]float64 {
	t.Helper()
	v, err := p.query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out := map[string]float64{}
	for _, s := range v {
		out[string(s.Metric[catalog.LabelResource])] = float64(s.Value)
	}
	return out
}

// watchView is what an exporter says of a resource's watch, for a log.
func watchView(e haExporter, resource string) string {
	m, err := testenv.Scrape(e.MetricsURL())
	if err != nil {
		return err.Error()
	}
	l := map[string]string{catalog.LabelResource: resource}
	silence, _ := m.Value(catalog.WatchSilence.Name, l)
	stale, _ := m.Value(catalog.CacheStaleness.Name, l)
	return fmt.Sprintf("silence %.0fs, staleness %.0fs, relists %v, watch starts %v, list errors %v, watch errors %v", silence, stale,
		m.Sum(catalog.Relists.Name, l), m.Sum(catalog.WatchStarts.Name, l), m.Sum(catalog.ListErrors.Name, l), m.Sum(catalog.WatchErrors.Name, l))
}

// serverLosesEtcd: one API server loses etcd (APIServer.StallEtcd: every
// byte between it and the etcd members held) while the other two go on.
// Its watch cache stands still; an exporter whose informers are on it
// (forced by its direct address, client-go's HTTP/2: one connection)
// delivers nothing more, while its head probe and canary go to another
// server: a consistent read through the stalled one fails only at its
// 60 s request timeout, which would leave the head unknown and nothing
// to page (in production the probe's connection lands where the
// balancer puts it). Its freshness reads ride the informers' connection
// and fail there, as they would. The stalled server is the one the
// balancer holds the fewest connections to, so that the workload's
// writes (the admin's one HTTP/2 connection through it) go on.
//
// Prometheus first holds stageHistory of the API servers' series: the
// etcd_to_cache stage allows each cache its usual pause between updates,
// learned over slo.AllowanceMemory, and a cache stalled a few seconds
// after Prometheus starts looks like one that never changes (one run:
// 1 change in 149 samples, a 600 s allowance, the stage named nowhere in
// 8 minutes). Then pages reach the webhook, and say where: a page names
// the stalled server's instance, stage etcd_to_cache, within the bound;
// none names another stage or server, and the first page names it (the
// canary's, about a minute in: the test's burn windows are scaled down,
// its stage windows are not; the stage is named once the cache's RV
// stands still a few scrapes beyond its usual pause). The stage series
// at the first page and when the stage is named are logged. After the
// release the exporter is fresh again and its pages resolve. Pages that
// start after the release are not judged: the stall's own burn arriving
// late, and quiet resources whose staleness was unknown through the stall
// (their freshness reads fail on the stalled server: state head_unknown)
// and known again at the release, page then, naming cache_to_client
// (the 5m delivery percentiles keep the stall's delay, the cache's trail
// is gone).
func (h *haStack) serverLosesEtcd(t *testing.T) {
	h.scenario(t)
	ha := h.env.HA
	stalledIdx := 0
	for i, s := range ha.Servers {
		if s.Backend.Open() < ha.Servers[stalledIdx].Backend.Open() {
			stalledIdx = i
		}
	}
	probeIdx := (stalledIdx + 1) % len(ha.Servers)
	stalled := ha.Servers[stalledIdx]
	instance := serverInstance(stalled)
	for _, s := range ha.Servers {
		t.Logf("%s (instance %s): %d connections of the balancer open", s.Name, serverInstance(s), s.Backend.Open())
	}
	t.Logf("stalling %s's etcd; informers on it, head probe and canary on %s", stalled.Name, ha.Servers[probeIdx].Name)
	e := h.startExporter(t, "etcd-loss", ha.Direct(h.token, stalledIdx), ha.Direct(h.token, probeIdx), false)
	p := h.monitor(t, e)
	h.waitStageHistory(t, p, e.cluster)
	h.logStages(t, p, e.cluster, "before the stall", slo.RuleWorstStage)

	cacheRV := func() (uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return stalled.WatchCacheRV(ctx, "", canaryResource)
	}
	stalledAt := time.Now()
	stalled.StallEtcd()
	released := false
	release := func() {
		if !released {
			stalled.ReleaseEtcd()
			released = true
		}
	}
	t.Cleanup(release)

	const bound = 8 * time.Minute
	page := h.hook.wait(t, bound, "a page of "+e.cluster, func(a notifiedAlert) bool { return resourcePage(a, e.cluster, stalledAt) })
	t.Logf("first page %v after the stall: %s", page.Received.Sub(stalledAt).Round(time.Second), page)
	h.logStages(t, p, e.cluster, "at the first page")
	// read once the stall holds: a write in flight as it began may still
	// reach the cache (a read just before the stall saw RV 2017, the cache
	// stood at 2019 through it)
	rv, err := cacheRV()
	if err != nil {
		t.Fatal(err)
	}
	h.checkPage(t, page)

	where := fmt.Sprintf("Where: the watch cache of API server %s, ", instance)
	names := func(a notifiedAlert) bool {
		d := a.Annotations["description"]
		return strings.Contains(d, where) && strings.Contains(d, "(stage "+slo.StageEtcdToCache+", ")
	}
	// the first notification is the one on-call reads: Alertmanager does
	// not send a page again when its annotations change
	if !names(page) {
		t.Errorf("the first page, notified %v after the stall, does not name %s's watch cache (%s): %q", page.Received.Sub(stalledAt).Round(time.Second),
			stalled.Name, instance, page.Annotations["description"])
	}
	named := h.hook.wait(t, bound, "a page naming "+stalled.Name+"'s watch cache", func(a notifiedAlert) bool {
		return resourcePage(a, e.cluster, stalledAt) && names(a)
	})
	t.Logf("a page names %s's watch cache %v after the stall: %s", stalled.Name, named.Received.Sub(stalledAt).Round(time.Second), named)
	h.logStages(t, p, e.cluster, "at the page naming it")
	if now, err := cacheRV(); err != nil || now != rv {
		t.Errorf("%s's watch cache of %s moved with its etcd stalled: RV %d at the first page, now %d (%v)", stalled.Name, canaryResource, rv, now, err)
	}
	// every notification of a page: the stalled cache or no stage
	h.judgeWhere(t, e.cluster, stalledAt, time.Now(), "the stall", fmt.Sprintf("%s's watch cache (%s)", stalled.Name, instance), names)

	// recovery: fresh again, the pages resolve
	releasedAt := time.Now()
	release()
	h.waitRecovered(t, p, e, page, releasedAt)
}

// resourcePage reports whether a is the firing notification of a page
// about a resource of cluster that started after since.
func resourcePage(a notifiedAlert, cluster string, since time.Time) bool {
	return a.Status == "firing" && a.Labels["severity"] == slo.DefaultSeverityPage && a.Labels["cluster"] == cluster &&
		a.Labels[catalog.LabelResource] != "" && a.StartsAt.After(since)
}

// waitStageHistory waits until p holds stageHistory of every API server's
// watch-cache series of cluster, as a Prometheus that has long scraped
// them does.
func (h *haStack) waitStageHistory(t *testing.T, p *prometheusServer, cluster string) {
	t.Helper()
	samples := int(stageHistory / apiServerScrapeInterval)
	p.waitQuery(t, stageHistory+2*time.Minute, fmt.Sprintf(`min(count_over_time(%s{job=%q, cluster=%q}[%s])) >= %d`,
		slo.APIServerWatchCacheRV, h.spec.WithDefaults().APIServerJob, cluster, slo.AllowanceMemory, samples))
}

// logStages logs the stage group's series of cluster in p (rules; every
// one of slo.StageRules without), saying when.
func (h *haStack) logStages(t *testing.T, p *prometheusServer, cluster, when string, rules ...string) {
	t.Helper()
	if len(rules) == 0 {
		rules = []string{slo.RuleWorstStage, slo.RuleWatchCacheBehind, slo.RuleDeliveryDelay, slo.RuleStageDelay}
	}
	for _, rule := range rules {
		t.Logf("%s: %s %s", when, rule, p.describeVector(fmt.Sprintf("%s{cluster=%q}", rule, cluster)))
	}
}

// judgeWhere judges the "Where:" of every page of cluster that started
// after since (the fault's beginning) and was notified by until: one
// that names says the fault's stage (want says which, for the log) or
// no stage at all (logged: no stage was a second late, or the
// notification came before the stage rules saw the delay); one naming
// another stage fails the test.
func (h *haStack) judgeWhere(t *testing.T, cluster string, since, until time.Time, fault, want string, names func(notifiedAlert) bool) {
	t.Helper()
	for _, a := range h.pages(cluster, since) {
		if a.Received.After(until) {
			continue
		}
		d, after := a.Annotations["description"], a.Received.Sub(since).Round(time.Second)
		switch {
		case names(a):
		case strings.Contains(d, " Where: "):
			t.Errorf("%s of %s, notified %v after %s began, names another stage than %s: %q", a.Labels["alertname"], a.Labels[catalog.LabelResource], after, fault, want, d)
		default:
			t.Logf("%s of %s, notified %v after %s began, names no stage", a.Labels["alertname"], a.Labels[catalog.LabelResource], after, fault)
		}
	}
}

// waitRecovered waits, after a fault of e's ended at ended, until every
// resource of e is fresh again, page is resolved and no page alert is
// pending or firing in p.
func (h *haStack) waitRecovered(t *testing.T, p *prometheusServer, e haExporter, page notifiedAlert, ended time.Time) {
	t.Helper()
	h.waitFreshAll(t, e, ended)
	h.waitResolved(t, page, ended)
	testenv.WaitFor(t, 5*time.Minute, "no page alert pending or firing", func() (bool, error) {
		as, err := p.alerts()
		if err != nil {
			return false, err
		}
		for _, a := range as {
			if string(a.Labels["severity"]) == slo.DefaultSeverityPage {
				return false, fmt.Errorf("%s %s", a.State, a.Labels)
			}
		}
		return true, nil
	})
	t.Logf("recovered %v after the fault ended", time.Since(ended).Round(time.Second))
}

// stageHistory is how much of the API servers' series a scenario's
// Prometheus holds before it breaks a server: enough for the etcd_to_cache
// stage's allowance of each cache's usual pause (over slo.AllowanceMemory)
// to be small beside a stall of minutes (about 7 s at 3 minutes of stall).
const stageHistory = 5 * time.Minute
