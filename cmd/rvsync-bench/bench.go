package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testenv"
)

// bench holds what every measured run shares.
type bench struct {
	opts       options
	env        *testenv.Env
	load       kubernetes.Interface
	set        objectSet
	kubeconfig string
	dir        string
	version    atomic.Int64 // of the ConfigMaps' data, so every write changes them
}

// runResult is one program's measurement over one churn period.
type runResult struct {
	program         string
	round           int
	syncSeconds     float64 // start to synced, wall clock
	startupCPU      float64 // CPU seconds until synced
	cpu             float64 // CPU seconds during the churn period (and its drain)
	hwm, rss        int64   // peak RSS over the whole run; RSS at the end of the period
	events          float64
	eventsPerSec    float64
	writesPerSec    float64
	skipped, errors int64
	requests        map[string]float64 // per verb, per second, to the watched resource, excluding the churn's updates
	load            string
}

// measure starts p, waits for it to sync, churns for the period and stops it.
func (b *bench) measure(ctx context.Context, p *program, round int) (runResult, error) {
	res := runResult{program: p.name, round: round + 1}
	start := time.Now()
	r, err := p.start(b.kubeconfig, b.dir)
	if err != nil {
		return res, err
	}
	defer r.stop()
	if err := r.waitSynced(ctx, benchResource, b.set.n); err != nil {
		return res, err
	}
	res.syncSeconds = time.Since(start).Seconds()
	if u, err := readUsage(r.pid()); err == nil {
		res.startupCPU = u.cpuSeconds
	}
	sleep(ctx, b.opts.settle)

	ev0, err := r.events(ctx, benchResource)
	if err != nil {
		return res, err
	}
	req0, err := scrapeRequests(ctx, b.load)
	if err != nil {
		return res, err
	}
	u0, err := readUsage(r.pid())
	if err != nil {
		return res, err
	}
	cctx, cancel := context.WithTimeout(ctx, b.opts.period)
	churned := b.set.churn(cctx, b.load, b.opts.rate, b.opts.churnWorkers, &b.version)
	cancel()
	sleep(ctx, time.Second) // let the program drain the last events
	u1, err := readUsage(r.pid())
	if err != nil {
		return res, err
	}
	req1, err := scrapeRequests(ctx, b.load)
	if err != nil {
		return res, err
	}
	ev1, err := r.events(ctx, benchResource)
	if err != nil {
		return res, err
	}
	secs := b.opts.period.Seconds()
	res.cpu = u1.cpuSeconds - u0.cpuSeconds
	res.hwm, res.rss = u1.hwm, u1.rss
	res.events = ev1 - ev0
	res.eventsPerSec = res.events / secs
	res.writesPerSec = float64(churned.writes) / secs
	res.skipped, res.errors = churned.skipped, churned.errors
	own := req1.sub(req0, func(k requestKey) bool {
		return k.resource == benchResource && k.verb != "PUT" // PUT: the churn's own updates
	})
	res.requests = perSecond(own.byVerb(), secs)
	res.load = loadAverage()
	return res, nil
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
	if err := r.waitSynced(ctx, emptyResource, 0); err != nil {
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
		{"1 resource (" + benchResource + ")", []string{benchResource}},
		{"default resources", config.DefaultResources},
		{"every listable resource", all},
	}
	var out []scaleResult
	var background map[string]float64
	for _, s := range sets {
		logf("API-server cost, idle: %s (%d resources)", s.label, len(s.resources))
		var r *running
		if len(s.resources) > 0 {
			if r, err = exporterProgram(exp.bin, s.resources).start(b.kubeconfig, b.dir); err != nil {
				return nil, err
			}
			if err := r.waitSynced(ctx, benchResource, b.set.n); err != nil {
				r.stop()
				return nil, err
			}
			sleep(ctx, 5*time.Second) // the other (small) informers sync too
		}
		req0, err := scrapeRequests(ctx, b.load)
		if err == nil {
			sleep(ctx, b.opts.scaleWindow)
			var req1 requestCounts
			if req1, err = scrapeRequests(ctx, b.load); err == nil {
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
func watchableResources(env *testenv.Env) ([]string, error) {
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
