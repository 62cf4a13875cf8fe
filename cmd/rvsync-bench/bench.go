package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
)

// bench holds what every measured run shares.
type bench struct {
	opts       options
	env        *controlplane.Env
	load       *loader
	set        objectSet
	kubeconfig string
	dir        string
	version    atomic.Int64 // of the objects' data, so every write changes them
}

// runResult is one program's measurement: its initial sync, then one churn
// period per rate.
type runResult struct {
	program          string
	round            int
	syncSeconds      float64 // start to synced, wall clock
	startupCPU       float64 // CPU seconds until synced
	hwmSync, rssSync int64   // peak RSS during the initial sync; RSS when synced
	phases           []phaseResult
	hwm, rss         int64   // peak RSS over the whole run; RSS at the end (steady state)
	scrape           float64 // seconds per text scrape of /metrics (median of 5; exporter only)
	load             string
}

// phaseResult is one churn period at one rate.
type phaseResult struct {
	rate            float64
	cpu             float64 // CPU seconds during the period (and its drain)
	events          float64
	writesPerSec    float64
	skipped, errors int64
	requests        map[string]float64 // per verb, per second, to the watched resources, excluding the churn's writes
}

// cpuPer1000 is the CPU seconds per 1,000 events processed.
func (p phaseResult) cpuPer1000() float64 {
	if p.events == 0 {
		return 0
	}
	return p.cpu / p.events * 1000
}

// measure starts p, waits for it to sync, churns at each rate for the
// period and stops it.
func (b *bench) measure(ctx context.Context, p *program, round int) (runResult, error) {
	res := runResult{program: p.name, round: round + 1}
	start := time.Now()
	r, err := p.start(b.kubeconfig, b.dir)
	if err != nil {
		return res, err
	}
	defer r.stop()
	if err := r.waitSynced(ctx, b.set.wantObjects(benchResources)); err != nil {
		return res, err
	}
	res.syncSeconds = time.Since(start).Seconds()
	u, err := readUsage(r.pid())
	if err != nil {
		return res, err
	}
	res.startupCPU, res.hwmSync, res.rssSync = u.cpuSeconds, u.hwm, u.rss
	sleep(ctx, b.opts.settle)
	for _, rate := range b.opts.rates {
		profile := ""
		if b.opts.perfDir != "" && round == 0 {
			profile = filepath.Join(b.opts.perfDir, fmt.Sprintf("%s-%.0f.data", p.name, rate))
		}
		ph, err := b.churnPhase(ctx, r, rate, profile)
		if err != nil {
			return res, err
		}
		res.phases = append(res.phases, ph)
	}
	if u, err = readUsage(r.pid()); err != nil {
		return res, err
	}
	res.hwm, res.rss = u.hwm, u.rss
	if r.metrics != "" {
		if res.scrape, err = scrapeSeconds(ctx, r.metrics, 5); err != nil {
			return res, err
		}
	}
	res.load = loadAverage()
	return res, nil
}

// churnPhase drives rate writes per second for the period and reads what
// the program spent on them; with profile set it records the program's CPU
// with perf into that file meanwhile.
func (b *bench) churnPhase(ctx context.Context, r *running, rate float64, profile string) (phaseResult, error) {
	ph := phaseResult{rate: rate}
	ev0, err := r.events(ctx)
	if err != nil {
		return ph, err
	}
	req0, err := scrapeRequests(ctx, b.env.Client)
	if err != nil {
		return ph, err
	}
	u0, err := readUsage(r.pid())
	if err != nil {
		return ph, err
	}
	var stopPerf func() error
	if profile != "" {
		if stopPerf, err = perfRecord(r.pid(), profile); err != nil {
			return ph, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, b.opts.period)
	churned := b.set.churn(cctx, b.load, rate, b.opts.churnWorkers, &b.version)
	cancel()
	sleep(ctx, time.Second) // let the program drain the last events
	if stopPerf != nil {
		if err := stopPerf(); err != nil {
			return ph, err
		}
	}
	u1, err := readUsage(r.pid())
	if err != nil {
		return ph, err
	}
	req1, err := scrapeRequests(ctx, b.env.Client)
	if err != nil {
		return ph, err
	}
	ev1, err := r.events(ctx)
	if err != nil {
		return ph, err
	}
	secs := b.opts.period.Seconds()
	ph.cpu = u1.cpuSeconds - u0.cpuSeconds
	ph.events = ev1 - ev0
	if r.prog.kind == ksmName {
		ph.events = float64(churned.writes) // it counts none: one event per write
	}
	ph.writesPerSec = float64(churned.writes) / secs
	ph.skipped, ph.errors = churned.skipped, churned.errors
	own := req1.sub(req0, func(k requestKey) bool { return watchedPlural(k.resource) && !churnRequest(k) })
	ph.requests = perSecond(own.byVerb(), secs)
	return ph, nil
}

// watchedPlural reports whether plural (as apiserver_request_total labels
// resources) is one of the benchmark's resources.
func watchedPlural(plural string) bool {
	for _, r := range benchResources {
		if p, _, _ := strings.Cut(r, "."); p == plural {
			return true
		}
	}
	return false
}

// wantObjects is how many objects each of the benchmark's resources among
// resources holds (the others are not waited for).
func (s objectSet) wantObjects(resources []string) map[string]int {
	want := map[string]int{}
	for _, r := range resources {
		if slices.Contains(benchResources, r) {
			want[r] = s.count(r)
		}
	}
	return want
}

// scrapeSeconds times n text scrapes of url and returns the median.
func scrapeSeconds(ctx context.Context, url string, n int) (float64, error) {
	times := make([]float64, n)
	for i := range times {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		times[i] = time.Since(start).Seconds()
	}
	return median(times), nil
}

// fixedCost is a program's cost without objects: RSS and idle CPU while
// it watches a resource with next to no objects.
type fixedCost struct {
	program string
	rss     int64
	idleCPU float64 // CPU seconds per 30 s, idle
}

// emptyResource has a handful of objects in a bare control plane.
const emptyResource = "leases.coordination.k8s.io"

// fixedCost runs p watching emptyResource only and reads its RSS and CPU
// over an idle window, so that the per-object cost of the main runs can be
// told apart from the program's fixed cost.
func (b *bench) fixedCost(ctx context.Context, p *program) (fixedCost, error) {
	res := fixedCost{program: p.name}
	r, err := p.start(b.kubeconfig, b.dir)
	if err != nil {
		return res, err
	}
	defer r.stop()
	if err := r.waitSynced(ctx, map[string]int{emptyResource: 0}); err != nil {
		return res, err
	}
	sleep(ctx, b.opts.settle)
	u0, err := readUsage(r.pid())
	if err != nil {
		return res, err
	}
	const window = 15 * time.Second
	sleep(ctx, window)
	u1, err := readUsage(r.pid())
	if err != nil {
		return res, err
	}
	res.rss, res.idleCPU = u1.rss, (u1.cpuSeconds-u0.cpuSeconds)*30/window.Seconds()
	return res, nil
}

// scaleResult is the exporter's steady API-server cost with some resources.
type scaleResult struct {
	label     string
	resources int
	perVerb   map[string]float64 // requests/s by verb, background subtracted, WATCH excluded
	lists     map[string]float64 // LIST requests/s by resource
}

// scaling measures the API-server requests of an idle exporter (no churn)
// watching one resource, the default resources and every listable and
// watchable resource, against an idle window without it.
func (b *bench) scaling(ctx context.Context, exp *program) ([]scaleResult, error) {
	all, err := watchableResources(b.env)
	if err != nil {
		return nil, err
	}
	sets := []struct {
		label     string
		resources []string
	}{
		{"none (API server background)", nil},
		{"1 resource (" + configMaps + ")", []string{configMaps}},
		{"default resources", config.DefaultResources},
		{"every listable resource", all},
	}
	var out []scaleResult
	var background map[string]float64
	for _, s := range sets {
		logf("API-server cost, idle: %s (%d resources)", s.label, len(s.resources))
		var r *running
		if len(s.resources) > 0 {
			if r, err = exporterProgram(exporterName, exp.bin, s.resources).start(b.kubeconfig, b.dir); err != nil {
				return nil, err
			}
			if err := r.waitSynced(ctx, b.set.wantObjects(s.resources)); err != nil {
				r.stop()
				return nil, err
			}
			sleep(ctx, 5*time.Second) // the other (small) informers sync too
		}
		req0, err := scrapeRequests(ctx, b.env.Client)
		if err == nil {
			sleep(ctx, b.opts.scaleWindow)
			var req1 requestCounts
			if req1, err = scrapeRequests(ctx, b.env.Client); err == nil {
				delta := req1.sub(req0, func(k requestKey) bool { return k.verb != "WATCH" })
				rates := perSecond(delta.byVerb(), b.opts.scaleWindow.Seconds())
				lists := map[string]float64{}
				for k, v := range delta {
					if k.verb == "LIST" {
						lists[k.resource] += v / b.opts.scaleWindow.Seconds()
					}
				}
				if background == nil {
					background = rates
				} else {
					for v, bg := range background {
						rates[v] = max(0, rates[v]-bg)
					}
				}
				out = append(out, scaleResult{label: s.label, resources: len(s.resources), perVerb: rates, lists: lists})
			}
		}
		if r != nil {
			r.stop()
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// watchableResources lists every resource the API server serves with list
// and watch, as plural.group names.
func watchableResources(env *controlplane.Env) ([]string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	var names []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			name := r.Name // the plural.group label form; core resources have no group
			if gv.Group != "" {
				name += "." + gv.Group
			}
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func perSecond(counts map[string]float64, secs float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range counts {
		out[k] = v / secs
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
