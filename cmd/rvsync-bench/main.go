// Command rvsync-bench is `make bench`: it measures the exporter against a
// plain client-go metadata informer (cmd/rvsync-baseline) on the same
// stream of changes, on a real control plane from bin/.
//
// It creates N ConfigMaps in several namespaces, then runs each program in
// turn (interleaved over several rounds, ABBA order) and, once the program
// has synced, drives M updates per second for a fixed period while reading
// from /proc the program's CPU seconds and RSS, from the program the events
// it processed, and from the API server's own /metrics the requests it
// received. A second phase runs the exporter idle with 1, the default and
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
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/internal/testenv"
)

// options are the benchmark's flags.
type options struct {
	objects, namespaces int
	rate                float64
	period, settle      time.Duration
	rounds              int
	createWorkers       int
	churnWorkers        int
	scaleWindow         time.Duration
	out                 string
	command             string
}

func main() {
	var o options
	flag.IntVar(&o.objects, "objects", 50000, "ConfigMaps to create (N)")
	flag.IntVar(&o.namespaces, "namespaces", 10, "namespaces to spread the ConfigMaps over")
	flag.Float64Var(&o.rate, "rate", 500, "ConfigMap updates per second during each measured period (M)")
	flag.DurationVar(&o.period, "period", 30*time.Second, "measured period of churn per run")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "wait after a program synced before measuring")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs the exporter and the baseline once, in alternating order")
	flag.IntVar(&o.createWorkers, "create-workers", 48, "concurrent writers creating the ConfigMaps")
	flag.IntVar(&o.churnWorkers, "churn-workers", 32, "concurrent writers during churn")
	flag.DurationVar(&o.scaleWindow, "scale-window", 30*time.Second, "idle window per resource count in the API-server cost phase (0 skips the phase)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "Markdown file whose generated section receives the results (empty: print only)")
	flag.Parse()
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
	root, err := testenv.RepoRoot()
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

	logf("starting etcd and kube-apiserver from bin/")
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig, err := writeKubeconfig(env, dir)
	if err != nil {
		return err
	}
	load, err := loadClient(env.Config)
	if err != nil {
		return err
	}
	if err := testenv.EnsureNamespace(ctx, load, canaryNamespace); err != nil {
		return err
	}

	set := objectSet{n: o.objects, namespaces: o.namespaces}
	logf("creating %d ConfigMaps in %d namespaces with %d writers", o.objects, o.namespaces, o.createWorkers)
	createStart := time.Now()
	created, err := set.create(ctx, load, o.createWorkers)
	if err != nil {
		return err
	}
	rep := report{opts: o, machine: machine(), loadStart: loadAverage(), createdIn: time.Since(createStart), created: created}
	logf("created %d in %v", created, rep.createdIn.Round(time.Second))

	exp := exporterProgram(exporterBin, []string{benchResource})
	base := &program{name: baselineName, bin: baselineBin, args: []string{"--resources", benchResource}}
	b := &bench{opts: o, env: env, load: load, set: set, kubeconfig: kubeconfig, dir: dir}
	for round := range o.rounds {
		order := []*program{exp, base}
		if round%2 == 1 {
			order = []*program{base, exp}
		}
		for _, p := range order {
			logf("round %d/%d: %s", round+1, o.rounds, p.name)
			r, err := b.measure(ctx, p, round)
			if err != nil {
				return err
			}
			logf("  cpu %.2fs  peak RSS %.1f MiB  events/s %.0f  writes/s %.0f", r.cpu, mib(r.hwm), r.eventsPerSec, r.writesPerSec)
			rep.runs = append(rep.runs, r)
		}
	}
	for _, p := range []*program{
		{name: exporterName, bin: exporterBin, args: []string{"--resources", emptyResource, "--canary=false", "--log-level", "warn"}},
		{name: baselineName, bin: baselineBin, args: []string{"--resources", emptyResource}},
	} {
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
		return writeSection(out, text)
	}
	return nil
}

const (
	benchResource   = "configmaps"
	canaryNamespace = "rvsync-bench"
)

// exporterProgram runs the exporter with its defaults (5s probe, canary
// every 10s) watching resources.
func exporterProgram(bin string, resources []string) *program {
	return &program{name: exporterName, bin: bin, args: []string{
		"--resources", strings.Join(resources, ","), "--canary-namespace", canaryNamespace, "--log-level", "warn",
	}}
}

// loadClient is an admin client without client-side rate limits, for
// creating objects and churning them.
func loadClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return kubernetes.NewForConfig(cfg)
}

// writeKubeconfig writes a kubeconfig of an admin user for the programs.
func writeKubeconfig(env *testenv.Env, dir string) (string, error) {
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
