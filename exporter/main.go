package exporter

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
	"runtime"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
)

// Main runs the exporter command with args (without the program name) and
// returns its exit code: 0 on a clean stop (SIGINT, SIGTERM), 1 on a
// runtime failure, 2 on bad flags or configuration, with one line on stderr
// naming the problem and how to fix it.
func Main(args []string, stdout, stderr io.Writer, build BuildInfo) int {
	inv, err := config.Parse(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "exporter: %v\n", err)
		return 2
	}
	switch {
	case inv.Version:
		fmt.Fprintf(stdout, "rvsync exporter %s (revision %s, %s)\n", build.Version, build.Revision, runtime.Version())
		return 0
	case inv.Check:
		out, err := yaml.Marshal(inv.Config)
		if err != nil {
			fmt.Fprintf(stderr, "exporter: %v\n", err)
			return 1
		}
		_, _ = stdout.Write(out)
		return 0
	}
	cfg := inv.Config
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
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
	e, err := newExporter(options{Config: cfg, InformerConfig: informerCfg, ProbeConfig: probeCfg, Logger: log, Build: build})
	if err == nil {
		err = e.run(ctx)
	}
	var cerr *configError
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

// newLogger logs at level and above in format (config.LogFormatText or
// config.LogFormatJSON), both validated by config.Config.Validate.
func newLogger(w io.Writer, level, format string) logr.Logger {
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[level]
	opts := &slog.HandlerOptions{Level: lv}
	if format == config.LogFormatJSON {
		return logr.FromSlogHandler(slog.NewJSONHandler(w, opts))
	}
	return logr.FromSlogHandler(slog.NewTextHandler(w, opts))
}
