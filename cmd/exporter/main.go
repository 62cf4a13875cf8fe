// Command exporter runs the rvsync exporter: instrumented informers and head
// probes for a set of resources, served as Prometheus metrics.
//
// It only parses flags and wires parts together; see package exporter.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/rvsync-slo/rvsync-slo/exporter"
	"github.com/rvsync-slo/rvsync-slo/exporter/collector"
)

// Set by the linker (see Makefile).
var (
	version  = "dev"
	revision = "unknown"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run returns the exit code: 0 on a clean stop, 1 on a runtime failure, 2 on
// bad flags or configuration (one line on stderr naming the problem).
func run(args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "exporter: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel)
	klog.SetLogger(log)

	informerCfg, err := loadKubeconfig(cfg.Kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "exporter: --kubeconfig: %v\n", err)
		return 2
	}
	probeCfg := informerCfg
	if cfg.ProbeKubeconfig != "" {
		if probeCfg, err = loadKubeconfig(cfg.ProbeKubeconfig); err != nil {
			fmt.Fprintf(stderr, "exporter: --probe-kubeconfig: %v\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := exporter.New(exporter.Options{
		Config: cfg, InformerConfig: informerCfg, ProbeConfig: probeCfg, Logger: log,
		Build: collector.BuildInfo{Version: version, Revision: revision},
	})
	if err == nil {
		err = e.Run(ctx)
	}
	var cerr *exporter.ConfigError
	switch {
	case errors.As(err, &cerr):
		fmt.Fprintf(stderr, "exporter: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "exporter: %v\n", err)
		return 1
	}
	return 0
}

// parseFlags reads the flags, then the --config file, and lets flags that
// were set explicitly override the file.
func parseFlags(args []string, stderr io.Writer) (exporter.Config, error) {
	fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
	// Errors are reported by run in one line; usage only on --help.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		configFile   = fs.String("config", "", "YAML config file with the same settings as the flags plus per-resource options (flags that are set override it)")
		kubeconfig   = fs.String("kubeconfig", "", "kubeconfig for the informers (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
		probeKube    = fs.String("probe-kubeconfig", "", "kubeconfig for the head probe (default: the same as --kubeconfig); the probe always uses its own connection")
		listen       = fs.String("listen-address", ":8080", "address serving /metrics, /healthz and /readyz")
		resources    = fs.String("resources", strings.Join(exporter.DefaultResources, ","), "comma-separated resources to watch, as plural.group (core: plural), e.g. pods,deployments.apps")
		interval     = fs.Duration("probe-interval", exporter.DefaultProbeInterval, "period of the head-RV probe of each RV space (jittered by 10%)")
		logLevel     = fs.String("log-level", "info", "log level: debug, info, warn or error")
		maxResources = fs.Int("max-resources", exporter.DefaultMaxResources, "refuse to watch more resources than this (bounds label cardinality)")
		canary       = fs.Bool("canary", true, "write a heartbeat object every --canary-interval and time its delivery by the exporter's own informer")
		canaryEvery  = fs.Duration("canary-interval", exporter.DefaultCanaryInterval, "period of canary writes")
		canaryDead   = fs.Duration("canary-deadline", exporter.DefaultCanaryDeadline, "a canary write not delivered within this counts as lost")
		secure       = fs.Bool("secure-metrics", false, "serve /metrics over TLS to scrapers whose token may get the non-resource URL /metrics (TokenReview + SubjectAccessReview; the exporter needs system:auth-delegator)")
		certDir      = fs.String("metrics-cert-dir", "", "directory with tls.crt and tls.key for --secure-metrics (default: a self-signed certificate)")
		shard        = fs.Int("shard", 0, "this replica's shard, in [0, --total-shards): it watches the resources whose name hashes to it")
		totalShards  = fs.Int("total-shards", 1, "number of shards the resources are split across (one replica each)")
		shardFromPod = fs.Bool("shard-from-pod-name", false, "take --shard from the StatefulSet ordinal ending $POD_NAME")
		canaryNS     = fs.String("canary-namespace", "", "namespace of the canary objects (default: the exporter's own namespace: $POD_NAMESPACE, else the service account's, else default)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: exporter [flags]\n\nExports how far informer caches trail the API server, per resource.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return exporter.Config{}, err
		}
		return exporter.Config{}, fmt.Errorf("%w (see --help)", err)
	}
	if fs.NArg() > 0 {
		return exporter.Config{}, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	var cfg exporter.Config
	if *configFile != "" {
		var err error
		if cfg, err = exporter.LoadFile(*configFile); err != nil {
			return cfg, err
		}
	}
	// Without a file every flag applies (with its default); with one, only
	// the flags given on the command line override it.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := func(name string, apply func()) {
		if *configFile == "" || set[name] {
			apply()
		}
	}
	override("kubeconfig", func() { cfg.Kubeconfig = *kubeconfig })
	override("probe-kubeconfig", func() { cfg.ProbeKubeconfig = *probeKube })
	override("listen-address", func() { cfg.ListenAddress = *listen })
	override("resources", func() { cfg.Resources = exporter.ParseResourceList(*resources) })
	override("probe-interval", func() { cfg.ProbeInterval.Duration = *interval })
	override("log-level", func() { cfg.LogLevel = *logLevel })
	override("max-resources", func() { cfg.MaxResources = *maxResources })
	override("canary", func() { cfg.Canary.Enabled = canary })
	override("canary-interval", func() { cfg.Canary.Interval.Duration = *canaryEvery })
	override("canary-deadline", func() { cfg.Canary.Deadline.Duration = *canaryDead })
	override("canary-namespace", func() { cfg.Canary.Namespace = *canaryNS })
	override("secure-metrics", func() { cfg.SecureMetrics = *secure })
	override("metrics-cert-dir", func() { cfg.MetricsCertDir = *certDir })
	override("shard", func() { cfg.Shard = *shard })
	override("total-shards", func() { cfg.TotalShards = *totalShards })
	override("shard-from-pod-name", func() { cfg.ShardFromPodName = *shardFromPod })
	cfg.Defaults()
	if err := cfg.ResolveShard(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// loadKubeconfig follows the documented order: an explicit path; else
// in-cluster; else $KUBECONFIG; else ~/.kube/config.
func loadKubeconfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	if c, err := rest.InClusterConfig(); err == nil {
		return c, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if rules.ExplicitPath == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		home, _ := os.UserHomeDir()
		if _, err := os.Stat(filepath.Join(home, ".kube", "config")); err != nil {
			return nil, errors.New("not in a cluster, $KUBECONFIG unset and no ~/.kube/config: pass --kubeconfig")
		}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func newLogger(w io.Writer, level string) logr.Logger {
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[level]
	return logr.FromSlogHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}
