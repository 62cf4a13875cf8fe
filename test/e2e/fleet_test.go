//go:build integration

package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// envThanos names the Thanos binary; the Makefile sets it to the version
// it builds into bin/.
const envThanos = "RVSYNC_THANOS"

// replicaLabel tells the Prometheus replicas of one cluster apart; Thanos
// Query deduplicates along it and the replicas drop it from their alerts.
const replicaLabel = "replica"

// multiClusterValues is the chart values file of one cluster of a fleet.
const multiClusterValues = "multi-cluster-values.yaml"

// fleetCluster is one cluster of the fleet: its control plane and exporter
// (a stack without monitoring) and the Prometheus replicas scraping it.
type fleetCluster struct {
	name  string
	stack *stack
	proms []*prometheusServer
}

// fleet is two clusters, each Prometheus with a Thanos sidecar, one Thanos
// Query over every sidecar and one Alertmanager for all.
type fleet struct {
	spec     slo.Spec
	clusters []*fleetCluster // a, then b
	query    *prometheusServer
	raw      *prometheusServer // the same Query without deduplication
	hook     *webhook
	logDir   string
	start    time.Time
}

// TestFleet runs a fleet of two clusters behind Thanos Query, configured
// with the chart's ci/multi-cluster-values.yaml: clusters a and b, each a
// control plane with its exporter; a Prometheus for a and two replicas for
// b, each with external_labels {cluster, replica}, evaluating the rules
// itself and sending alerts, replica label dropped, to one Alertmanager;
// a Thanos sidecar per Prometheus and one Query deduplicating on replica.
// It proves that Query counts every series once, that a watch stalled in
// b pages once, naming b, while a stays silent, and that every dashboard
// query answers from Query for each cluster and for the fleet. A soak
// (make test-soak); the gate proves the cluster label and the selector in
// every rule and query (alerts' and dashboards' unit tests) and the chart's
// multi-cluster values (test/chart).
func TestFleet(t *testing.T) {
	testenv.RequireSoak(t, "the cluster label in every rule and query (alerts, dashboards unit tests)")
	thanos, err := testenv.Binary(envThanos, "thanos-*/thanos")
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel() // beside the other suites, on stacks of its own
	f := startFleet(t, thanos)
	// stallPages stalls b's watches for the rest of the test: the later
	// subtests need a stalled cluster beside a healthy one.
	t.Cleanup(f.clusters[1].stack.proxy.Release)
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t)
		}
	})
	t.Run("query_counts_each_series_once", f.countsOnce)
	t.Run("every_panel_answers_for_each_cluster", f.panelsAnswer)
	t.Run("stall_in_b_pages_with_cluster_b", f.stallPages)
	t.Run("dashboards_per_cluster_and_fleet", f.dashboards)
	t.Run("b_paged_once_a_silent", f.pagedOnce)
}

// startFleet starts the clusters, their Prometheus replicas and sidecars,
// Alertmanager and Query.
func startFleet(t *testing.T, thanos string) *fleet {
	t.Helper()
	values := filepath.Join(chartDir(t), "ci", multiClusterValues)
	f := &fleet{spec: fleetSpec(t, testSpec(), values), logDir: t.TempDir(), start: time.Now()}
	rules, err := alerts.Render(f.spec)
	if err != nil {
		t.Fatal(err)
	}
	f.hook = startWebhook(t)
	// Every alert its own group: a notification per alert, so "paged once"
	// can be counted.
	am := startAlertmanagerPerAlert(t, f.logDir, f.hook.srv.URL)
	var stores []string
	for _, c := range []struct {
		name     string
		replicas int
	}{{"a", 1}, {"b", 2}} {
		fc := &fleetCluster{name: c.name, stack: startStack(t, stackOptions{valuesFiles: []string{values}, ownMonitoring: true})}
		if c.name == "a" {
			checkChartRules(t, fc.stack.chart, asChartRendersIt(t, fleetSpec(t, slo.DefaultSpec(), values)))
		}
		for i := range c.replicas {
			p := startPrometheusWith(t, fc.stack.logDir, prometheusOptions{
				name:         fmt.Sprintf("prometheus-%d", i),
				rules:        rules,
				alertmanager: am,
				interval:     scrapeInterval,
				scrapeConfigs: []any{map[string]any{
					"job_name":       scrapeJob,
					"static_configs": []any{map[string]any{"targets": []string{fc.stack.exporter.Addr}}},
				}},
				externalLabels: map[string]string{f.spec.ClusterLabel: c.name, replicaLabel: strconv.Itoa(i)},
				// Both replicas send every alert; without their replica
				// label Alertmanager sees one alert and notifies once.
				alertRelabel: []any{map[string]any{"action": "labeldrop", "regex": replicaLabel}},
			})
			fc.proms = append(fc.proms, p)
			stores = append(stores, startSidecar(t, thanos, fc.stack.logDir, fmt.Sprintf("thanos-sidecar-%d", i), p))
		}
		f.clusters = append(f.clusters, fc)
	}
	f.query, f.raw = startQuery(t, thanos, f.logDir, stores)
	return f
}

func chartDir(t *testing.T) string {
	t.Helper()
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fleetSpec returns base with the settings of the chart values file that
// shape the rules: cluster label, selectors and extra labels.
// checkChartRules proves that nothing else in the file changes them.
func fleetSpec(t *testing.T, base slo.Spec, valuesFile string) slo.Spec {
	t.Helper()
	b, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cluster struct {
			Label string `json:"label"`
		} `json:"cluster"`
		SLO struct {
			Selector    string            `json:"selector"`
			UpSelector  string            `json:"upSelector"`
			ExtraLabels map[string]string `json:"extraLabels"`
		} `json:"slo"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", valuesFile, err)
	}
	if v.Cluster.Label != "" {
		base.ClusterLabel = v.Cluster.Label
	}
	base.Selector, base.UpSelector, base.ExtraLabels = v.SLO.Selector, v.SLO.UpSelector, v.SLO.ExtraLabels
	return base
}

// asChartRendersIt adds to s what the chart derives from its release and
// version: runbooks at the chart's release tag, the dashboards' UIDs under
// the values' fullnameOverride, the alerts' namespace label.
func asChartRendersIt(t *testing.T, s slo.Spec) slo.Spec {
	t.Helper()
	v, err := chart.Version()
	if err != nil {
		t.Fatal(err)
	}
	s.RunbookURLPrefix = "https://github.com/rvsync-slo/rvsync-slo/blob/v" + v + "/docs/runbooks.md#"
	s.DashboardUIDPrefix = "rvsync-slo-" // fullnameOverride of the multi-cluster values
	s.AlertNamespace = namespace
	return s
}

// checkChartRules fails t unless the chart's rules as rendered (the
// PrometheusRule) are alerts.Render(want): the rules the test runs are the
// chart's, but for its scaled windows and symptom durations.
func checkChartRules(t *testing.T, m chart.Manifests, want slo.Spec) {
	t.Helper()
	wantRules, err := alerts.Render(want)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.RuleFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("no rules in the chart as rendered with %s: %v", multiClusterValues, err)
	}
	wantNorm, err := chart.NormalRules(wantRules)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range files {
		gotNorm, err := chart.NormalRules(got)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if gotNorm != wantNorm {
			t.Fatalf("the chart's %s with %s is not alerts.Render of the spec the test derives from the file: a value shapes the rules that fleetSpec does not read", name, multiClusterValues)
		}
	}
}

// startSidecar runs a Thanos sidecar in front of p and returns its gRPC
// (Store API) address. It is ready once it has read p's external labels.
func startSidecar(t *testing.T, thanos, logDir, name string, p *prometheusServer) string {
	t.Helper()
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	startDaemonAt(t, name, thanos, logDir, "http://"+httpAddr+"/-/ready", "sidecar",
		"--prometheus.url="+p.url,
		"--tsdb.path="+p.tsdb,
		"--grpc-address="+grpcAddr,
		"--http-address="+httpAddr,
		"--log.level=warn",
	)
	return grpcAddr
}

// startQuery runs Thanos Query over the Store API endpoints, deduplicating
// along replicaLabel, and returns clients of its HTTP API: deduplicated (the
// default) and not (dedup=false).
func startQuery(t *testing.T, thanos, logDir string, endpoints []string) (dedup, raw *prometheusServer) {
	t.Helper()
	var sd struct {
		Endpoints []map[string]string `json:"endpoints"`
	}
	for _, e := range endpoints {
		sd.Endpoints = append(sd.Endpoints, map[string]string{"address": e})
	}
	sdConfig, err := yaml.Marshal(sd)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	url := "http://" + httpAddr
	startDaemonAt(t, "thanos-query", thanos, logDir, url+"/-/ready", "query",
		"--http-address="+httpAddr,
		"--grpc-address="+freeAddr(t),
		"--endpoint.sd-config="+string(sdConfig),
		"--query.replica-label="+replicaLabel,
		"--log.level=warn",
	)
	return newPromAPI(t, url, nil), newPromAPI(t, url, withParam{key: "dedup", value: "false", next: api.DefaultRoundTripper})
}

// withParam adds a query parameter to every request.
type withParam struct {
	key, value string
	next       http.RoundTripper
}

func (w withParam) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	q := r.URL.Query()
	q.Set(w.key, w.value)
	r.URL.RawQuery = q.Encode()
	return w.next.RoundTrip(r)
}

// byCluster evaluates q (by the cluster label) on p: value by cluster.
func (f *fleet) byCluster(p *prometheusServer, q string) (map[string]float64, error) {
	vec, err := p.query(q)
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric[model.LabelName(f.spec.ClusterLabel)])] = float64(s.Value)
	}
	return out, err
}

// waitByCluster waits until q, evaluated on p by the cluster label, gives
// want.
func (f *fleet) waitByCluster(t *testing.T, p *prometheusServer, what, q string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	testenv.WaitFor(t, 3*time.Minute, fmt.Sprintf("%s: %s = %v", what, q, want), func() (bool, error) {
		var err error
		got, err = f.byCluster(p, q)
		return maps.Equal(got, want), err
	})
	t.Logf("%s: %s = %v", what, q, got)
}

// countsOnce: Query sees both clusters, and b's two replicas (both present
// without deduplication) count once: synced informers, recorded SLO
// series, and each resource's objects equal to its exporter's own scrape.
func (f *fleet) countsOnce(t *testing.T) {
	for _, c := range f.clusters {
		c.stack.waitMetrics(t, 3*time.Minute, "every informer of cluster "+c.name+" synced", c.stack.allSynced)
	}
	cl := f.spec.ClusterLabel
	synced := fmt.Sprintf("count by (%s) (%s == 1)", cl, catalog.InformerSynced.Name)
	once, perReplica := map[string]float64{}, map[string]float64{}
	for _, c := range f.clusters {
		once[c.name] = float64(len(c.stack.resources))
		perReplica[c.name] = float64(len(c.stack.resources) * len(c.proms))
	}
	f.waitByCluster(t, f.query, "synced informers, deduplicated", synced, once)
	f.waitByCluster(t, f.raw, "synced informers, every replica", synced, perReplica)

	// Recording rules, evaluated by each replica: the clusters watch the
	// same resources, so b deduplicated records what a does.
	a, b := f.clusters[0].name, f.clusters[1].name
	objective := fmt.Sprintf("count by (%s) (%s)", cl, slo.RuleObjective)
	var dedup, raw map[string]float64
	testenv.WaitFor(t, 3*time.Minute, "recorded objectives: b deduplicated as a, twice without deduplication", func() (bool, error) {
		var err error
		if dedup, err = f.byCluster(f.query, objective); err != nil {
			return false, err
		}
		if raw, err = f.byCluster(f.raw, objective); err != nil {
			return false, err
		}
		return dedup[a] > 0 && dedup[b] == dedup[a] && raw[a] == dedup[a] && raw[b] == 2*dedup[b], nil
	})
	t.Logf("%s: deduplicated %v, without deduplication %v", objective, dedup, raw)

	// Ground truth: each exporter's own scrape, against what Query sums.
	objects := fmt.Sprintf("sum by (%s, %s) (%s)", cl, catalog.LabelResource, catalog.Objects.Name)
	testenv.WaitFor(t, 2*time.Minute, "Query's objects per resource equal to each exporter's", func() (bool, error) {
		vec, err := f.query.query(objects)
		if err != nil {
			return false, err
		}
		got := map[string]float64{}
		for _, s := range vec {
			got[string(s.Metric[model.LabelName(cl)])+"/"+string(s.Metric[catalog.LabelResource])] = float64(s.Value)
		}
		want := map[string]float64{}
		for _, c := range f.clusters {
			m := c.stack.metrics(t)
			for _, r := range c.stack.resources {
				want[c.name+"/"+r] = m.Sum(catalog.Objects.Name, res(r))
			}
		}
		if !maps.Equal(got, want) {
			return false, fmt.Errorf("Query %v, exporters %v", got, want)
		}
		return true, nil
	})
}

// panelsAnswer waits until every dashboard query returns data from Query
// for each cluster over the run (a healthy cluster has no alerts to list):
// every signal of both clusters is on record before b's stall, which
// silences b's informers (no convergence observed, for one).
func (f *fleet) panelsAnswer(t *testing.T) {
	ds, err := loadDashboards()
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 3*time.Minute, "every dashboard query answering for each cluster", func() (bool, error) {
		r := promv1.Range{Start: f.start, End: time.Now(), Step: 2 * time.Second}
		for _, c := range f.clusters {
			empty, _ := f.query.emptyPanels(t, ds, r, grafanaVars{f.spec.ClusterLabel: c.name})
			for _, q := range empty {
				if !alertList(q) {
					return false, fmt.Errorf("%s=%s: no data yet from %s", f.spec.ClusterLabel, c.name, q.where)
				}
			}
		}
		return true, nil
	})
}

// alertList reports whether q lists alerts (ALERTS), which a healthy
// cluster has none of.
func alertList(q panelQuery) bool { return strings.Contains(q.expr, "ALERTS{") }

// stallPages: the watches of b's exporter stall in its proxy (probe and
// canary run direct); RvsyncWatchStalled reaches the webhook with
// cluster="b" and no replica label. Both replicas fire it (Query without
// deduplication sees two), Query shows one. The stall lasts to the end of
// the test, so the dashboards see a stalled cluster beside a healthy one.
func (f *fleet) stallPages(t *testing.T) {
	b := f.clusters[1]
	stalled := time.Now()
	b.stack.proxy.Stall() // released when TestFleet ends
	cl := f.spec.ClusterLabel
	page := f.hook.wait(t, 5*time.Minute, "a "+alerts.AlertWatchStalled+" page for "+canaryResource+" in cluster b", func(a notifiedAlert) bool {
		return a.Status == "firing" && a.Labels["alertname"] == alerts.AlertWatchStalled &&
			a.Labels[catalog.LabelResource] == canaryResource && a.Labels[cl] == b.name && a.StartsAt.After(stalled)
	})
	t.Logf("paged %v after the stall: %s", page.Received.Sub(stalled).Round(time.Second), page)
	b.stack.checkPage(t, page)
	if _, ok := page.Labels[replicaLabel]; ok {
		t.Errorf("the page carries the replica label: each replica's copy would page: %s", page)
	}
	firing := fmt.Sprintf(`count by (%s) (ALERTS{alertname=%q, alertstate="firing", %s=%q})`,
		cl, alerts.AlertWatchStalled, catalog.LabelResource, canaryResource)
	f.waitByCluster(t, f.raw, "the stall firing in each replica of b", firing, map[string]float64{b.name: float64(len(b.proms))})
	f.waitByCluster(t, f.query, "the stall firing once in Query", firing, map[string]float64{b.name: 1})
}

// dashboards: every panel query of the chart's dashboards returns data from
// Query over the run with the cluster variable set to a, to b and to All
// (a healthy cluster has no alerts to list); the cluster variable lists both
// clusters; the overview's resource table ranks the resources of the whole
// fleet, the stalled cluster's worst.
func (f *fleet) dashboards(t *testing.T) {
	ds, err := loadDashboards()
	if err != nil {
		t.Fatal(err)
	}
	r := promv1.Range{Start: f.start, End: time.Now(), Step: 2 * time.Second}
	clusterVar := f.spec.ClusterLabel // the dashboards name the variable after the label
	var names []string
	for _, c := range f.clusters {
		names = append(names, c.name)
	}
	for _, d := range ds {
		for _, v := range d.Templating.List {
			if v.Name != clusterVar {
				continue
			}
			got, err := f.query.labelValues(v.Definition, r)
			if err != nil || !slices.Equal(got, names) {
				t.Errorf("%s: variable %s (%s) lists %v, want %v (err %v)", d.Title, v.Name, v.Definition, got, names, err)
			}
		}
	}
	for _, sel := range append(names, allSelection) {
		empty, checked := f.query.emptyPanels(t, ds, r, grafanaVars{clusterVar: sel})
		for _, q := range empty {
			if sel == f.clusters[0].name && alertList(q) {
				continue // a is healthy: no alert to list
			}
			t.Errorf("%s=%s: %s returns no data: %s", clusterVar, sel, q.where, q.expr)
		}
		t.Logf("%s=%s: %d panel queries checked, %d without data", clusterVar, sel, checked, len(empty))
	}
	f.ranksFleet(t, ds, r)
}

// ranksFleet: the overview's table of resources, worst first, over the
// whole fleet holds a row per resource of each cluster, and its staleness
// column ranks a stalled resource of b first.
func (f *fleet) ranksFleet(t *testing.T, ds []grafanaDashboard, r promv1.Range) {
	t.Helper()
	const title = "Resources, worst first"
	var table *grafanaPanel
	var overview grafanaDashboard
	for _, d := range ds {
		if p, ok := d.panel(title); ok && strings.HasSuffix(d.Title, "Overview") {
			table, overview = &p, d
		}
	}
	if table == nil {
		t.Fatalf("no overview panel %q", title)
	}
	vars, err := f.query.resolveVariables(overview, r, grafanaVars{f.spec.ClusterLabel: allSelection})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range f.clusters {
		want += len(c.stack.resources)
	}
	cl := model.LabelName(f.spec.ClusterLabel)
	checked := 0
	for _, tg := range table.Targets {
		expr, err := vars.substitute(tg.Expr)
		if err != nil {
			t.Fatal(err)
		}
		vec, err := f.query.query(expr)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(vec, func(x, y *model.Sample) int { return cmp.Compare(y.Value, x.Value) }) // worst first
		switch {
		case strings.Contains(tg.Expr, catalog.InformerSynced.Name):
			checked++
			if len(vec) != want {
				t.Errorf("%s (%s): %d rows for %d resources of the fleet: %v", title, tg.RefID, len(vec), want, vec)
			}
		case strings.Contains(tg.Expr, catalog.CacheStaleness.Name):
			checked++
			if len(vec) == 0 || string(vec[0].Metric[cl]) != f.clusters[1].name {
				t.Errorf("%s (%s): want a resource of the stalled cluster b worst, have %v", title, tg.RefID, vec)
			} else {
				t.Logf("%s: worst staleness %s %s (%s s above its proof period)", title, vec[0].Metric[cl], vec[0].Metric[catalog.LabelResource], vec[0].Value)
			}
		}
	}
	if checked != 2 {
		t.Errorf("%s: want its synced and staleness columns, found %d of them", title, checked)
	}
}

// panel returns d's panel titled title, rows included.
func (d grafanaDashboard) panel(title string) (grafanaPanel, bool) {
	var find func([]grafanaPanel) (grafanaPanel, bool)
	find = func(ps []grafanaPanel) (grafanaPanel, bool) {
		for _, p := range ps {
			if p.Title == title {
				return p, true
			}
			if p, ok := find(p.Panels); ok {
				return p, true
			}
		}
		return grafanaPanel{}, false
	}
	return find(d.Panels)
}

// pagedOnce: over the whole run every page notified names cluster b, none
// carries the replica label, each alert is notified once although two
// replicas evaluate it, and neither a's Prometheus nor Query ever saw a
// page alert of a, pending or firing.
func (f *fleet) pagedOnce(t *testing.T) {
	cl := f.spec.ClusterLabel
	a, b := f.clusters[0], f.clusters[1]
	seen := map[string]int{}
	for _, n := range f.hook.received() {
		if n.Status != "firing" || n.Labels["severity"] != slo.DefaultSeverityPage {
			continue
		}
		if n.Labels[cl] != b.name {
			t.Errorf("a page not from the stalled cluster b: %s", n)
		}
		if _, ok := n.Labels[replicaLabel]; ok {
			t.Errorf("a page with the replica label: %s", n)
		}
		seen[fmt.Sprint(n.Labels)]++
	}
	if len(seen) == 0 {
		t.Error("no page notified")
	}
	for alert, n := range seen {
		if n != 1 {
			t.Errorf("notified %d times: %s", n, alert)
		}
	}
	t.Logf("%d pages of cluster b, each notified once", len(seen))
	as, err := a.proms[0].alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, al := range as {
		if string(al.Labels["severity"]) == slo.DefaultSeverityPage {
			t.Errorf("cluster a's Prometheus has a %s page alert: %s", al.State, al.Labels)
		}
	}
	r := promv1.Range{Start: f.start, End: time.Now(), Step: 2 * time.Second}
	q := fmt.Sprintf(`ALERTS{%s=%q, severity=%q}`, cl, a.name, slo.DefaultSeverityPage)
	if paged, err := f.query.hasData(q, r); err != nil || paged {
		t.Errorf("Query over the run: %s has data %v (err %v)", q, paged, err)
	}
}

// dump logs the webhook's notifications, each Prometheus's alerts and
// each cluster's stack.
func (f *fleet) dump(t *testing.T) {
	t.Logf("webhook notifications:\n%s", f.hook.dump())
	for _, c := range f.clusters {
		for i, p := range c.proms {
			t.Logf("Prometheus %d of cluster %s, alerts:\n%s", i, c.name, p.describeAlerts())
		}
		t.Logf("cluster %s:", c.name)
		c.stack.dump(t)
	}
	entries, _ := os.ReadDir(f.logDir)
	for _, e := range entries {
		t.Logf("tail of %s:\n%s", e.Name(), testenv.Tail(filepath.Join(f.logDir, e.Name()), 40))
	}
}
