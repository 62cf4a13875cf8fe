// Command rvsync-demo is `make demo`: it starts etcd and kube-apiserver
// from bin/, a workload that writes ConfigMaps and Deployments, and the
// exporter against them, then prints a live table of the signals every few
// seconds until Ctrl-C (or --duration).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/exporterproc"
	"github.com/rvsync-slo/rvsync-slo/internal/scrape"
	"github.com/rvsync-slo/rvsync-slo/internal/workload"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

func main() {
	listen := flag.String("listen-address", "127.0.0.1:8080", "address of the exporter's /metrics")
	every := flag.Duration("every", 5*time.Second, "table refresh period")
	duration := flag.Duration("duration", 0, "stop after this long (0: run until Ctrl-C)")
	rate := flag.Float64("rate", 20, "ConfigMap writes per second of the workload")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if err := run(ctx, *listen, *every, *rate); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-demo: %v\n", err)
		os.Exit(1)
	}
}

var demoResources = []string{"configmaps", "deployments.apps", "namespaces", "serviceaccounts", "leases.coordination.k8s.io"}

func run(ctx context.Context, listen string, every time.Duration, rate float64) error {
	fmt.Println("starting etcd and kube-apiserver from bin/ …")
	env, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig, err := writeKubeconfig(env)
	if err != nil {
		return err
	}
	fmt.Printf("control plane at %s (kubeconfig: %s)\n", env.Config.Host, kubeconfig)

	if err := workload.EnsureNamespace(ctx, env.Client, "demo"); err != nil {
		return err
	}
	go workload.Churn(ctx, env.Client, "demo", 50, rate)
	go workload.ChurnDeployments(ctx, env.Client, "demo", 5, 3*time.Second)

	logFile, err := os.Create(filepath.Join(os.TempDir(), "rvsync-demo-exporter.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	e, err := exporterproc.StartExporter(exporterproc.ExporterOptions{
		Informer: env.Config, Log: logFile, Addr: listen,
		Args: []string{"--resources=" + strings.Join(demoResources, ",")},
	})
	if err != nil {
		return err
	}
	defer func() { _ = e.Stop(30 * time.Second) }()
	url := e.MetricsURL()
	fmt.Printf("exporter metrics at %s (logs: %s); Ctrl-C stops\n\n", url, logFile.Name())

	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if e.Exited() {
				return fmt.Errorf("the exporter exited; see %s", logFile.Name())
			}
			m, err := scrape.Scrape(url)
			if err != nil {
				fmt.Printf("scrape: %v\n", err)
				continue
			}
			printTable(os.Stdout, m)
		}
	}
}

func printTable(w io.Writer, m scrape.Metrics) {
	fmt.Fprintf(w, "%s\n", time.Now().Format(time.TimeOnly))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resource\tsynced\tobjects\tRV lag\tstaleness s\tList p95 s\tdelivery p99 s\tcanary p50 s\trelists\tunconverged\t")
	names := append([]string(nil), demoResources...)
	sort.Strings(names)
	for _, n := range names {
		r := map[string]string{catalog.LabelResource: n}
		value := func(metric catalog.Metric) string {
			if v, ok := m.Value(metric.Name, r); ok {
				return fmt.Sprintf("%.0f", v)
			}
			return "-"
		}
		quantile := func(metric catalog.Metric, q float64) string {
			if h, ok := m.MergedHistogram(metric.Name, r); ok && h.GetSampleCount() > 0 {
				return fmt.Sprintf("%.3f", scrape.Quantile(h, q))
			}
			return "-"
		}
		stale := "-"
		if v, ok := m.Value(catalog.CacheStaleness.Name, r); ok {
			stale = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t\n", n,
			value(catalog.InformerSynced), value(catalog.Objects), value(catalog.ResourceVersionLag), stale,
			quantile(catalog.ListDuration, 0.95), quantile(catalog.EventDeliveryLag, 0.99),
			quantile(catalog.CanaryDeliveryLatency, 0.5), m.Sum(catalog.Relists.Name, r), value(catalog.UnconvergedObjects))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// writeKubeconfig saves an admin kubeconfig for the demo's control plane.
func writeKubeconfig(env *controlplane.Env) (string, error) {
	path := filepath.Join(os.TempDir(), "rvsync-demo.kubeconfig")
	return path, controlplane.WriteKubeconfig(path, env.Config)
}
