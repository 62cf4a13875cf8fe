// Command rvsync-bench is `make bench`: it measures the exporter against a
// plain client-go metadata informer (cmd/rvsync-baseline) on the same
// stream of changes, on a real control plane from the tool cache.
//
// It creates N objects (ConfigMaps, Secrets and a custom resource, with
// realistic metadata, in several namespaces), then runs each program in
// turn (interleaved over several rounds, ABBA order) and, once the program
// has synced, drives each of several update rates for a fixed period while
// reading from /proc the program's CPU seconds and RSS, from the program
// the events it processed, and from the API server's own /metrics the
// requests it received. A second phase runs the exporter idle with 1, the default and
// all resources to show how its periodic API-server cost grows with the
// number of resources. The results are printed and written as Markdown into
// docs/benchmarks.md between the markers of the generated section.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rvsync-slo/rvsync-slo/internal/readme"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/workload"
)

// options are the benchmark's flags.
type options struct {
	objects, namespaces int
	rates               []float64
	period, settle      time.Duration
	rounds              int
	createWorkers       int
	churnWorkers        int
	scaleWindow         time.Duration
	out                 string
	perfDir             string
	ksm                 string
	exporterB           string
	command             string
}

func main() {
	var o options
	flag.IntVar(&o.objects, "objects", 50000, "objects to create (N), a third each ConfigMaps, Secrets and Widgets (a custom resource)")
	flag.IntVar(&o.namespaces, "namespaces", 10, "namespaces to spread the objects over")
	rates := flag.String("rates", "200,1000", "comma-separated update rates (writes/s over all objects), one measured period each")
	flag.DurationVar(&o.period, "period", 30*time.Second, "measured period of churn per run")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "wait after a program synced before measuring")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds; each runs every program once, in an order reversed every other round (ABBA)")
	flag.IntVar(&o.createWorkers, "create-workers", 48, "concurrent writers creating the ConfigMaps")
	flag.IntVar(&o.churnWorkers, "churn-workers", 32, "concurrent writers during churn")
	flag.DurationVar(&o.scaleWindow, "scale-window", 30*time.Second, "idle window per resource count in the API-server cost phase (0 skips the phase)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "Markdown file whose generated section receives the results (empty: print only)")
	flag.StringVar(&o.ksm, "ksm", "", "path of a kube-state-metrics binary to run side by side with the exporter and the baseline, on the same objects and churn (make bench BENCH_KSM=/path); empty: none")
	flag.StringVar(&o.exporterB, "exporter-b", "", "path of a second exporter binary (another build) to run side by side with the exporter built from this tree, as program "+exporterBName+": an A/B of two builds on the same objects and churn; empty: none")
	flag.StringVar(&o.perfDir, "perf", "", "directory for CPU profiles: each program's churn periods of the first round are recorded with Linux perf into <dir>/<program>-<rate>.data (read with perf report; perturbs that round's CPU figures slightly)")
	flag.Parse()
	for _, f := range []struct{ flag, path, what string }{
		{"ksm", o.ksm, "a kube-state-metrics binary"},
		{"exporter-b", o.exporterB, "an exporter binary"},
	} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "rvsync-bench: -%s %q: not an executable file; give the path of %s or leave -%s empty\n", f.flag, f.path, f.what, f.flag)
			os.Exit(2)
		}
	}
	for _, f := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 {
			fmt.Fprintf(os.Stderr, "rvsync-bench: -rates %q: want positive numbers separated by commas, e.g. 200,1000\n", *rates)
			os.Exit(2)
		}
		o.rates = append(o.rates, r)
	}
	ctrllog.SetLogger(logr.Discard()) // envtest's CRD installer logs through it
	o.command = "go run ./cmd/rvsync-bench " + strings.Join(os.Args[1:], " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-bench: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
}

func run(ctx context.Context, o options) error {
	root, err := process.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rvsync-bench-")
	if err != nil {
		return err
	}
	logf("building the exporter and the baseline into %s", dir)
	exporterBin, baselineBin := filepath.Join(dir, "exporter"), filepath.Join(dir, "rvsync-baseline")
	for pkg, out := range map[string]string{"./cmd/exporter": exporterBin, "./cmd/rvsync-baseline": baselineBin} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", pkg, err)
		}
	}

	logf("starting etcd and kube-apiserver from the tool cache")
	// etcd's default 2 GiB quota is too small for 500,000 objects and
	// their history between compactions
	env, err := controlplane.Start(controlplane.Options{EtcdArgs: map[string]string{"quota-backend-bytes": strconv.Itoa(8 << 30)}})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig, err := writeKubeconfig(env, dir)
	if err != nil {
		return err
	}
	load, err := newLoader(env.Config)
	if err != nil {
		return err
	}
	if err := workload.EnsureNamespace(ctx, load.typed, canaryNamespace); err != nil {
		return err
	}
	if err := installWidgets(env.Config); err != nil {
		return err
	}

	set := objectSet{n: o.objects, namespaces: o.namespaces}
	logf("creating %d objects (%s) in %d namespaces with %d writers", o.objects, strings.Join(benchResources, ", "), o.namespaces, o.createWorkers)
	createStart := time.Now()
	created, err := set.createAll(ctx, load, o.createWorkers)
	if err != nil {
		return err
	}
	rep := report{opts: o, machine: machine(), loadStart: loadAverage(), createdIn: time.Since(createStart), created: created}
	logf("created %d in %v", created, rep.createdIn.Round(time.Second))

	exp := exporterProgram(exporterName, exporterBin, benchResources)
	base := &program{name: baselineName, kind: baselineName, bin: baselineBin, args: []string{"--resources", strings.Join(benchResources, ",")}}
	b := &bench{opts: o, env: env, load: load, set: set, kubeconfig: kubeconfig, dir: dir}
	programs := []*program{exp, base}
	if o.exporterB != "" {
		programs = append(programs, exporterProgram(exporterBName, o.exporterB, benchResources))
	}
	if o.ksm != "" {
		programs = append(programs, ksmProgram(o.ksm, benchResources))
	}
	for round := range o.rounds {
		order := slices.Clone(programs)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, p := range order {
			logf("round %d/%d: %s", round+1, o.rounds, p.name)
			r, err := b.measure(ctx, p, round)
			if err != nil {
				return err
			}
			logf("  sync %.1fs  peak RSS in sync %.1f MiB  RSS at end %.1f MiB  scrape %.1f ms", r.syncSeconds, mib(r.hwmSync), mib(r.rss), r.scrape*1000)
			for _, ph := range r.phases {
				logf("  %.0f/s: cpu %.2fs  events %.0f  writes/s %.0f  CPU-s per 1,000 events %.3f", ph.rate, ph.cpu, ph.events, ph.writesPerSec, ph.cpuPer1000())
			}
			rep.runs = append(rep.runs, r)
		}
	}
	fixed := []*program{
		{name: exporterName, kind: exporterName, bin: exporterBin, args: []string{"--resources", emptyResource, "--canary=false", "--log-level", "warn"}},
		{name: baselineName, kind: baselineName, bin: baselineBin, args: []string{"--resources", emptyResource}},
	}
	if o.ksm != "" {
		fixed = append(fixed, ksmProgram(o.ksm, []string{emptyResource}))
	}
	for _, p := range fixed {
		logf("fixed cost: %s watching %s", p.name, emptyResource)
		f, err := b.fixedCost(ctx, p)
		if err != nil {
			return err
		}
		rep.fixed = append(rep.fixed, f)
	}
	if o.scaleWindow > 0 {
		if rep.scaling, err = b.scaling(ctx, exp); err != nil {
			return err
		}
	}
	rep.loadEnd = loadAverage()
	text := rep.markdown()
	fmt.Println(text)
	if o.out != "" {
		out := o.out
		if !filepath.IsAbs(out) {
			out = filepath.Join(root, out)
		}
		return readme.WriteSection(out, beginMarker(o.objects), endMarker(o.objects), text)
	}
	return nil
}

const canaryNamespace = "rvsync-bench"

// exporterProgram runs the exporter bin as program name with its defaults
// (5s probe, canary every 10s) watching resources.
func exporterProgram(name, bin string, resources []string) *program {
	return &program{name: name, kind: exporterName, bin: bin, args: []string{
		"--resources", strings.Join(resources, ","), "--canary-namespace", canaryNamespace, "--log-level", "warn",
	}}
}

// writeKubeconfig writes a kubeconfig of an admin user for the programs.
func writeKubeconfig(env *controlplane.Env, dir string) (string, error) {
	user, err := env.Environment.ControlPlane.AddUser(envtest.User{Name: "rvsync-bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
