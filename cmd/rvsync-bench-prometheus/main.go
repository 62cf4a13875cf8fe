// Command rvsync-bench-prometheus is `make bench-prometheus`: it measures
// what rvsync-slo costs the user's Prometheus, side by side with sloth's
// rules for the same SLOs on the same data in the same run.
//
// It first runs the real exporter on a real control plane and reads its
// exposition: the series one watched resource adds (today's figure) and the
// templates of a synthetic fleet of N watched resources. The fleet's history
// of the last D days is written as TSDB blocks, and the fleet then serves
// live scrapes that continue it. A real Prometheus scrapes the fleet and
// evaluates both rule packs for a few intervals; the recording rules'
// series it wrote are backfilled over the D days too (as a month of
// evaluation would have left them), and Prometheus restarts on the whole.
// For the measured period it then records each rule group's evaluation time
// at every interval, the process' CPU, the head series and the bytes stored
// per resource, and finally times every dashboard panel's query at the
// dashboard's default range. The results are printed and written as
// Markdown into docs/benchmarks.md between the markers of the generated
// section.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rvsync-slo/rvsync-slo/internal/readme"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// options are the benchmark's flags.
type options struct {
	resources     []int
	days          int
	scrape        time.Duration
	eval          time.Duration
	warmup        time.Duration
	profileWindow time.Duration
	repeats       int
	seed          uint64
	prometheus    string
	sloth         string
	dashboards    string
	out           string
	keep          string
	before        string
}

func main() {
	var o options
	res := flag.String("resources", "50,200", "comma-separated numbers of watched resources; one run each")
	flag.IntVar(&o.days, "days", 30, "days of history backfilled before the measured period (the budget period is 30d)")
	flag.DurationVar(&o.scrape, "scrape", 30*time.Second, "scrape and rule evaluation interval (kube-prometheus-stack's default)")
	flag.DurationVar(&o.eval, "eval", time.Hour, "measured period of rule evaluation per run")
	flag.DurationVar(&o.warmup, "warmup", 4*time.Minute, "evaluation before the recording rules' series are read and backfilled")
	flag.DurationVar(&o.profileWindow, "profile-window", 2*time.Minute, "how long the real exporter runs before its exposition is read")
	flag.IntVar(&o.repeats, "repeats", 20, "times each dashboard panel's query runs (p50 and p95 over them)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the incidents in the history")
	flag.StringVar(&o.prometheus, "prometheus", os.Getenv("RVSYNC_PROMETHEUS"), "Prometheus binary (make testbin builds it into the tool cache); empty: the newest in the tool cache")
	flag.StringVar(&o.sloth, "sloth", os.Getenv("RVSYNC_SLOTH"), "sloth binary (make sloth builds it into the tool cache); empty: the newest in the tool cache")
	flag.StringVar(&o.dashboards, "dashboards", "charts/rvsync-slo/files/dashboards", "directory of the dashboards whose panels are timed")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "Markdown file whose generated section receives the results (empty: print only)")
	flag.StringVar(&o.before, "before-rules", "", "a rule file of an earlier rvsync-slo (alerts.Render of the default Spec at that commit) to evaluate side by side as a third pack, renamed apart; empty: none")
	flag.StringVar(&o.keep, "keep", "", "directory to keep the runs' data and logs in (empty: a temporary one, removed)")
	flag.Parse()
	if err := o.parse(*res); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-bench-prometheus: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-bench-prometheus: %v\n", err)
		os.Exit(1)
	}
}

// parse checks the flags and finds the binaries.
func (o *options) parse(resources string) error {
	for _, f := range strings.Split(resources, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-resources %q: want comma-separated positive numbers, e.g. 50,200", resources)
		}
		o.resources = append(o.resources, n)
	}
	switch {
	case o.days < 1:
		return fmt.Errorf("-days %d: want at least 1 (the longest raw window the rules read is 3d)", o.days)
	case o.scrape < time.Second:
		return fmt.Errorf("-scrape %s: want at least 1s", o.scrape)
	case o.eval < 2*o.scrape:
		return fmt.Errorf("-eval %s: want at least two scrape intervals (%s)", o.eval, 2*o.scrape)
	case o.warmup < budgetInterval()+2*o.scrape:
		return fmt.Errorf("-warmup %s: want at least the budget groups' interval and two scrapes (%s), so every rule has evaluated", o.warmup, budgetInterval()+2*o.scrape)
	case o.repeats < 1:
		return fmt.Errorf("-repeats %d: want at least 1", o.repeats)
	}
	var err error
	if o.prometheus == "" {
		if o.prometheus, err = process.Binary("RVSYNC_PROMETHEUS", "prometheus-*/prometheus"); err != nil {
			return fmt.Errorf("%v; or give -prometheus", err)
		}
	}
	if o.sloth == "" {
		if o.sloth, err = process.Binary("RVSYNC_SLOTH", "sloth-*/sloth"); err != nil {
			return fmt.Errorf("%v (make sloth builds it); or give -sloth", err)
		}
	}
	if st, err := os.Stat(o.dashboards); err != nil || !st.IsDir() {
		return fmt.Errorf("-dashboards %q: not a directory; run from the repository's root or give the dashboards' directory", o.dashboards)
	}
	return nil
}

// budgetInterval is the evaluation interval of rvsync-slo's budget groups.
func budgetInterval() time.Duration {
	d, err := model.ParseDuration(slo.BudgetInterval)
	if err != nil {
		panic(err)
	}
	return time.Duration(d)
}

// run profiles the exporter, then measures each fleet size and writes the
// report.
func run(ctx context.Context, o options) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
	}
	dir := o.keep
	if dir == "" {
		d, err := os.MkdirTemp("", "rvsync-bench-prometheus-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	p, err := captureProfile(ctx, o.profileWindow, logf)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	logf("profile: %d resources, %.1f series per watched resource, %d plain templates, %d series without a resource", len(p.resources), p.perResource(), len(p.plain), p.other)
	if len(p.plain) == 0 {
		return errors.New("profile: no watched resource without canary or convergence tracking to copy")
	}
	packs, err := rulePacks(ctx, o.sloth, o.before, dir)
	if err != nil {
		return err
	}
	rep := report{opts: o, profile: p, started: time.Now().UTC()}
	for _, n := range o.resources {
		r, err := measure(ctx, o, p, packs, n, filepath.Join(dir, fmt.Sprintf("n%d", n)), logf)
		if err != nil {
			return fmt.Errorf("%d resources: %w", n, err)
		}
		rep.runs = append(rep.runs, r)
	}
	text := rep.markdown()
	fmt.Print(text)
	if o.out == "" {
		return nil
	}
	return readme.WriteSection(o.out, beginMarker, endMarker, text)
}
