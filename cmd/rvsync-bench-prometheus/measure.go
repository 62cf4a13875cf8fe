package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// job is the scrape job of the synthetic exporter: the chart's job name,
// which the rules' up selector matches.
const job = "rvsync-slo"

// jobNHCB scrapes the fleet in the warm-up a second time, converting its
// classic histograms to native ones with custom buckets.
const jobNHCB = "rvsync-slo-nhcb"

// A pack is one rule file: rvsync-slo's shipped rules or sloth's for the
// same SLOs.
type pack struct {
	name    string
	path    string
	records []string // the names of its recording rules
}

// Pack names.
const (
	packOurs   = "rvsync-slo"
	packBefore = "rvsync-slo before"
	packSloth  = "sloth"
)

// rulePacks writes rvsync-slo's rules (alerts.Render of the default Spec,
// what the chart ships) and generates sloth's for the same SLOs into dir;
// with before set, the rules of an earlier rvsync-slo too, renamed so that
// both can run in one Prometheus (beforeNames).
func rulePacks(ctx context.Context, sloth, before, dir string) ([]pack, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	spec := slo.DefaultSpec()
	ours, err := alerts.Render(spec)
	if err != nil {
		return nil, err
	}
	oursPath := filepath.Join(dir, "rvsync-slo.rules.yaml")
	if err := os.WriteFile(oursPath, ours, 0o644); err != nil {
		return nil, err
	}
	sspec, err := slothSpec(spec)
	if err != nil {
		return nil, err
	}
	slothPath, err := slothRules(ctx, sloth, sspec, dir)
	if err != nil {
		return nil, err
	}
	all := []pack{{name: packOurs, path: oursPath}, {name: packSloth, path: slothPath}}
	if before != "" {
		b, err := os.ReadFile(before)
		if err != nil {
			return nil, fmt.Errorf("-before-rules: %w", err)
		}
		path := filepath.Join(dir, "rvsync-slo-before.rules.yaml")
		if err := os.WriteFile(path, beforeNames(b), 0o644); err != nil {
			return nil, err
		}
		all = append(all, pack{name: packBefore, path: path})
	}
	var packs []pack
	for _, p := range all {
		b, err := os.ReadFile(p.path)
		if err != nil {
			return nil, err
		}
		groups, err := chart.ParseRules(b)
		if err != nil {
			return nil, fmt.Errorf("%s rules: %w", p.name, err)
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Record != "" && !slices.Contains(p.records, r.Record) {
					p.records = append(p.records, r.Record)
				}
			}
		}
		packs = append(packs, p)
	}
	return packs, nil
}

// beforeNames renames the recording rules, alerts and groups of an earlier
// rvsync-slo's rule file, so that they write other series than today's.
func beforeNames(rules []byte) []byte {
	return []byte(strings.NewReplacer(
		"rvsync_slo:", "rvsync_slo_before:",
		"alert: Rvsync", "alert: BeforeRvsync",
		"name: rvsync-slo-", "name: before-rvsync-slo-",
	).Replace(string(rules)))
}

// runResult is what one fleet size measured.
type runResult struct {
	resources      int
	samples        int64         // backfilled, exporter series and recorded ones
	backfill       time.Duration // writing them
	storedBytes    int64         // the TSDB directory after the measured period
	headSeries     float64
	exporterSeries int            // live series of the synthetic exporter
	stored         map[string]int // by job: series Prometheus stores of the fleet, classic and NHCB
	recordedSeries map[string]int
	evals          map[string][]float64 // pack: seconds per interval (its groups' sum)
	evalGroups     map[string]int
	cpuSeconds     float64 // Prometheus' CPU over the measured period
	measured       time.Duration
	panels         []panelTiming
}

// measure backfills a fleet of n resources, runs Prometheus on it and
// records what it costs.
func measure(ctx context.Context, o options, p profile, packs []pack, n int, dir string, logf func(string, ...any)) (runResult, error) {
	r := runResult{resources: n, recordedSeries: map[string]int{}, evals: map[string][]float64{}, evalGroups: map[string]int{}}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return r, err
	}
	addr, err := process.FreeAddr()
	if err != nil {
		return r, err
	}
	// warm-up: which series do the rules record? A Prometheus of its own
	// evaluates both packs on a live fleet for a few minutes; the history
	// then holds those series too, in the same blocks as the exporter's (no
	// overlapping blocks to compact while measuring).
	logf("%d resources: a Prometheus evaluates both packs for the %s warm-up", n, o.warmup)
	w, err := warmUp(ctx, o, p, packs, n, filepath.Join(dir, "warm-up"), addr)
	if err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	recorded := w.recorded
	r.stored = w.stored
	for _, l := range recorded {
		for _, pk := range packs {
			if slices.Contains(pk.records, l.Get(model.MetricNameLabel)) {
				r.recordedSeries[pk.name]++
			}
		}
	}

	end := time.Now().Truncate(o.scrape)
	f := newFleet(p, n, job, addr, end.Add(-time.Duration(o.days)*24*time.Hour), end, o.seed)
	r.exporterSeries = f.seriesCount()
	f.addRecorded(recorded)
	began := time.Now()
	logf("%d resources: backfilling %d days of %d exporter and %d recorded series", n, o.days, r.exporterSeries, len(recorded))
	if r.samples, err = f.backfill(ctx, data, end, o.scrape, func(day int, samples int64) {
		if day%5 == 0 {
			logf("%d resources: day %d, %d samples", n, day, samples)
		}
	}); err != nil {
		return r, fmt.Errorf("backfill: %w", err)
	}
	r.backfill = time.Since(began)

	prom, stop, err := scrapeFleet(ctx, o, packs, dir, f, addr, false)
	if err != nil {
		return r, err
	}
	defer stop()
	logf("%d resources: waiting for Prometheus' compactions of the history to settle", n)
	if err := prom.settle(ctx); err != nil {
		return r, err
	}
	logf("%d resources: measuring %s of evaluation", n, o.eval)
	if err := prom.sampleEvaluations(ctx, o, packs, &r); err != nil {
		return r, err
	}
	if r.storedBytes, err = dirBytes(data); err != nil {
		return r, err
	}
	qs, err := loadPanels(o.dashboards, time.Now(), o.scrape, nil)
	if err != nil {
		return r, err
	}
	logf("%d resources: timing %d panel queries, %d times each", n, len(qs), o.repeats)
	if r.panels, err = timePanels(ctx, prom.url(), qs, o.repeats); err != nil {
		return r, err
	}
	return r, nil
}

// warmedUp is what the warm-up saw.
type warmedUp struct {
	recorded []labels.Labels // the series the packs' recording rules wrote
	stored   map[string]int  // by job: the series Prometheus stores of the fleet
}

// warmUp runs a Prometheus of its own on a live fleet of n resources,
// scraped as classic histograms and as native ones with custom buckets.
func warmUp(ctx context.Context, o options, p profile, packs []pack, n int, dir, addr string) (warmedUp, error) {
	var w warmedUp
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return w, err
	}
	defer os.RemoveAll(filepath.Join(dir, "data"))
	now := time.Now()
	prom, stop, err := scrapeFleet(ctx, o, packs, dir, newFleet(p, n, job, addr, now, now, o.seed), addr, true)
	if err != nil {
		return w, err
	}
	defer stop()
	if err := sleep(ctx, o.warmup); err != nil {
		return w, err
	}
	if w.recorded, err = prom.recordedSeries(ctx, packs); err != nil {
		return w, err
	}
	w.stored, err = prom.countByJob(ctx)
	return w, err
}

// scrapeFleet serves the fleet's live exposition on addr and starts a
// Prometheus (newPrometheus) in dir that scrapes it; stop stops both.
func scrapeFleet(ctx context.Context, o options, packs []pack, dir string, f *fleet, addr string, nhcb bool) (*prometheus, func(), error) {
	stopServing, err := serve(f, addr)
	if err != nil {
		return nil, nil, err
	}
	prom, err := newPrometheus(o, packs, dir, addr, nhcb)
	if err == nil {
		if err = prom.start(ctx); err != nil {
			prom.stop() // a process that never got ready
		}
	}
	if err != nil {
		stopServing()
		return nil, nil, err
	}
	return prom, func() { prom.stop(); stopServing() }, nil
}

// serve serves the fleet's live exposition on addr until stop is called.
func serve(f *fleet, addr string) (stop func(), err error) {
	var mu sync.Mutex
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b := f.exposition(time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(b)
	})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// seriesCount is the number of series the fleet exposes.
func (f *fleet) seriesCount() int {
	n := 0
	f.samples(f.last, func(*synth, int, string, string, float64) { n++ })
	return n
}

// prometheus is one Prometheus server on a run's data directory.
type prometheus struct {
	proc *process.Process
	addr string
	dir  string
}

// newPrometheus writes the configuration: the fleet scraped and the packs
// evaluated at the scrape interval; with nhcb, the fleet scraped a second
// time as job jobNHCB, its histograms converted to native ones with custom
// buckets (as the chart's ServiceMonitor asks).
func newPrometheus(o options, packs []pack, dir, target string, nhcb bool) (*prometheus, error) {
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range packs {
		files = append(files, fmt.Sprintf("%q", p.path))
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files: [%[2]s]
scrape_configs:
  - job_name: %[3]s
    static_configs: [{targets: [%[4]q]}]
`, model.Duration(o.scrape), strings.Join(files, ", "), job, target)
	if nhcb {
		cfg += fmt.Sprintf(`  - job_name: %s
    convert_classic_histograms_to_nhcb: true
    static_configs: [{targets: [%q]}]
`, jobNHCB, target)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &prometheus{addr: addr, dir: dir, proc: &process.Process{
		Path: o.prometheus,
		Log:  log,
		Args: []string{
			"--config.file=" + path,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--storage.tsdb.retention.time=" + fmt.Sprintf("%dd", o.days+10),
			"--web.listen-address=" + addr,
			"--query.max-samples=500000000",
		},
	}}, nil
}

func (p *prometheus) url() string { return "http://" + p.addr }

// settle waits until Prometheus has compacted what it will of the history
// (its compaction loop runs every minute): no compaction for two minutes.
func (p *prometheus) settle(ctx context.Context) error {
	last, quiet := -1.0, 0
	for deadline := time.Now().Add(time.Hour); time.Now().Before(deadline); {
		m, err := scrape.Scrape(p.url() + "/metrics")
		if err != nil {
			return err
		}
		n := m.Sum("prometheus_tsdb_compactions_total", nil) + m.Sum("prometheus_tsdb_compactions_failed_total", nil)
		if n == last {
			quiet++
		} else {
			quiet = 0
		}
		if quiet >= 4 {
			return nil
		}
		last = n
		if err := sleep(ctx, 30*time.Second); err != nil {
			return err
		}
	}
	return errors.New("prometheus still compacts the history after an hour")
}

// start starts the server and waits until it is ready (its blocks loaded).
func (p *prometheus) start(ctx context.Context) error {
	if err := p.proc.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		if p.proc.Exited() {
			return fmt.Errorf("prometheus exited: %s", process.Tail(filepath.Join(p.dir, "prometheus.log"), 20))
		}
		resp, err := http.Get(p.url() + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("prometheus not ready after 15 minutes: %s", process.Tail(filepath.Join(p.dir, "prometheus.log"), 20))
}

func (p *prometheus) stop() { _ = p.proc.Stop(time.Minute) }

// countByJob counts the series of each scrape job.
func (p *prometheus) countByJob(ctx context.Context) (map[string]int, error) {
	v, err := p.query(ctx, fmt.Sprintf(`count by (job) ({job=~"%s|%s"})`, job, jobNHCB))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range v {
		v, _ := s.Value[1].(string)
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("count of job %s: %w", s.Metric["job"], err)
		}
		out[s.Metric["job"]] = int(n)
	}
	return out, nil
}

// sample is one sample of an instant query's answer.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query.
func (p *prometheus) query(ctx context.Context, q string) ([]sample, error) {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := p.post(ctx, "/api/v1/query", url.Values{"query": {q}}, &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body.Error)
	}
	return body.Data.Result, nil
}

// post posts a form to the HTTP API and decodes the answer into out.
func (p *prometheus) post(ctx context.Context, path string, form url.Values, out any) error {
	_, body, err := postForm(ctx, http.DefaultClient, p.url()+path, form)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// postForm POSTs form to u, as Grafana and the API's clients do, and
// returns the answer's status code and body.
func postForm(ctx context.Context, client *http.Client, u string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, body, nil
}

// recordedSeries returns the label sets of every series the packs' recording
// rules wrote.
func (p *prometheus) recordedSeries(ctx context.Context, packs []pack) ([]labels.Labels, error) {
	var names []string
	for _, pk := range packs {
		names = append(names, pk.records...)
	}
	var body struct {
		Status string              `json:"status"`
		Error  string              `json:"error"`
		Data   []map[string]string `json:"data"`
	}
	if err := p.post(ctx, "/api/v1/series", url.Values{"match[]": {fmt.Sprintf(`{__name__=~%q}`, strings.Join(names, "|"))}}, &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("series of the recording rules: %s", body.Error)
	}
	var out []labels.Labels
	for _, m := range body.Data {
		out = append(out, labels.FromMap(m))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the recording rules wrote no series in the warm-up: %s", process.Tail(filepath.Join(p.dir, "prometheus.log"), 20))
	}
	return out, nil
}

// sampleEvaluations reads Prometheus' own metrics at every evaluation
// interval of the measured period: each group's last evaluation time, once
// per evaluation, summed per pack.
func (p *prometheus) sampleEvaluations(ctx context.Context, o options, packs []pack, r *runResult) error {
	first, err := scrape.Scrape(p.url() + "/metrics")
	if err != nil {
		return err
	}
	cpu0, _ := first.Value("process_cpu_seconds_total", nil)
	began := time.Now()
	seen := map[string]float64{} // group: its last evaluation's timestamp
	for time.Since(began) < o.eval {
		if err := sleep(ctx, o.scrape); err != nil {
			return err
		}
		m, err := scrape.Scrape(p.url() + "/metrics")
		if err != nil {
			return err
		}
		per := map[string]float64{}
		for _, mt := range m["prometheus_rule_group_last_duration_seconds"].GetMetric() {
			group := ""
			for _, l := range mt.GetLabel() {
				if l.GetName() == "rule_group" {
					group = l.GetValue()
				}
			}
			ts, _ := m.Value("prometheus_rule_group_last_evaluation_timestamp_seconds", map[string]string{"rule_group": group})
			if ts == 0 || ts == seen[group] {
				continue
			}
			seen[group] = ts
			for _, key := range packKeys(packs, group) {
				per[key] += mt.GetGauge().GetValue()
			}
		}
		for name, v := range per {
			r.evals[name] = append(r.evals[name], v)
		}
		r.headSeries, _ = m.Value("prometheus_tsdb_head_series", nil)
		cpu1, _ := m.Value("process_cpu_seconds_total", nil)
		r.cpuSeconds, r.measured = cpu1-cpu0, time.Since(began)
	}
	for group := range seen {
		for _, key := range packKeys(packs, group) {
			r.evalGroups[key]++
		}
	}
	return nil
}

// packKeys are the report's rows a rule group (file;name) counts in: its
// pack and, for a group of rvsync-slo's of an SLO sloth covers, that part
// of its pack too.
func packKeys(packs []pack, group string) []string {
	for _, pk := range packs {
		if !strings.HasPrefix(group, pk.path+";") {
			continue
		}
		if pk.name != packSloth && slothGroup(group) {
			return []string{pk.name, pk.name + threeSLOs}
		}
		return []string{pk.name}
	}
	return nil
}

// threeSLOs marks the part of a pack that covers the SLOs sloth's rules
// cover: its groups of those SLOs, without the others and the symptoms.
const threeSLOs = " (the SLOs sloth covers)"

// slothGroup reports whether a group of rvsync-slo's rules (file;name)
// belongs to one of the SLOs sloth's rules cover.
func slothGroup(group string) bool {
	_, name, _ := strings.Cut(group, ";")
	for _, o := range slothSLOs {
		if strings.HasSuffix(name, "-"+o) || strings.HasSuffix(name, "-"+o+"-budget") {
			return true
		}
	}
	return false
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
