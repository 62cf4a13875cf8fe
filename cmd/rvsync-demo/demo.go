package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/exporterproc"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/workload"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// demoResources are what the exporter watches: busy ConfigMaps (the
// workload's writes and the canary), converging Deployments, quiet
// Namespaces and ServiceAccounts, and Leases that kube-apiserver renews.
var demoResources = []string{"configmaps", "deployments.apps", "leases.coordination.k8s.io", "namespaces", "serviceaccounts"}

// workloadNamespace holds the workload's objects and the canary.
const workloadNamespace = "demo"

// exporterBuildCold is the exporter's expected build time, printed with
// its progress line: make demo builds rvsync-demo first, with the
// exporter's flags, which leaves little to compile (README, "make demo").
const exporterBuildCold = "seconds after make demo's build of rvsync-demo, ~1 min alone"

// demo is the running stack.
type demo struct {
	o       options
	out     io.Writer
	tty     bool
	started time.Time
	logDir  string
	dataDir string

	env      *controlplane.Env
	procs    *controlplane.Processes
	proxy    *faultproxy.Proxy
	exporter *exporterproc.Exporter
	receiver *receiver
	am, prom *process.Process
	promAPI  promv1.API
	inj      *injector
	wctx     context.Context    // the workload's and the faults' context
	cancel   context.CancelFunc // ends wctx
	faults   sync.WaitGroup     // fault goroutines, waited for before the stop

	logs   []*os.File
	mu     sync.Mutex // guards out (non-tty) and events
	events []string
	redraw chan struct{}
}

// run starts the stack, shows the table until ctx ends, q is pressed or
// --duration has passed, and stops everything it started.
func run(ctx context.Context, o options, stdin, stdout *os.File) (err error) {
	d := &demo{o: o, out: stdout, tty: isTerminal(stdout), started: time.Now(), redraw: make(chan struct{}, 1)}
	defer func() {
		if stopErr := d.stop(); err == nil {
			err = stopErr
		}
	}()
	if err := d.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // Ctrl-C during the start: a clean stop
		}
		return err
	}
	var keys <-chan byte
	if isTerminal(stdin) {
		var restore func()
		keys, restore, _ = readKeys(stdin)
		defer restore()
	}
	return d.loop(ctx, keys)
}

// printf writes a line of the startup and the shutdown.
func (d *demo) printf(format string, a ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format+"\n", a...)
}

// event adds a timestamped line to the event log: printed at once when
// the output is not a terminal, else shown under the table.
func (d *demo) event(format string, a ...any) {
	line := time.Now().Format(time.TimeOnly) + "  " + fmt.Sprintf(format, a...)
	d.mu.Lock()
	d.events = append(d.events, line)
	if !d.tty {
		fmt.Fprintln(d.out, line)
	}
	d.mu.Unlock()
	select {
	case d.redraw <- struct{}{}:
	default:
	}
}

// since is the time since the demo started, for the progress lines.
func (d *demo) since(t time.Time) time.Duration { return round(time.Since(t)) }

func (d *demo) start(ctx context.Context) error {
	var err error
	if d.logDir = d.o.logDir; d.logDir == "" {
		if d.logDir, err = os.MkdirTemp("", "rvsync-demo-logs-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(d.logDir, 0o755); err != nil {
		return err
	}
	if d.dataDir, err = os.MkdirTemp("", "rvsync-demo-data-"); err != nil {
		return err
	}
	d.printf("rvsync-demo: the rvsync-slo stack on this machine; logs in %s", d.logDir)
	for _, n := range d.o.notes {
		d.printf("   %s", n)
	}

	// The exporter builds while the control plane starts: both cores work.
	d.printf(">> building the exporter (cold: %s, on 2 cores)", exporterBuildCold)
	built := make(chan error, 1)
	go func() {
		t := time.Now()
		_, err := exporterproc.ExporterBinary()
		if err == nil {
			d.printf("   the exporter built in %s", d.since(t))
		}
		built <- err
	}()
	proxied, err := d.startControlPlane(ctx)
	if buildErr := <-built; err == nil {
		err = buildErr
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	t := time.Now()
	d.printf(">> starting the exporter (informers through a fault proxy at %s)", d.proxy.Addr())
	exporterLog, err := d.logFile("exporter.log")
	if err != nil {
		return err
	}
	d.exporter, err = exporterproc.StartExporter(exporterproc.ExporterOptions{
		Informer: proxied, Probe: d.env.Config, Addr: d.o.exporterAddr, Dir: d.dataDir,
		Log:  exporterLog,
		Args: []string{"--resources=" + strings.Join(demoResources, ",")},
		// the canary ConfigMap rvsync-canary-rvsync-demo in the workload's namespace
		Env: []string{"POD_NAME=rvsync-demo", "POD_NAMESPACE=" + workloadNamespace},
	})
	if err != nil {
		return err
	}
	d.printf("   exporter at %s, ready in %s", d.exporter.MetricsURL(), d.since(t))
	return d.startMonitoring(ctx)
}

// startControlPlane starts etcd and kube-apiserver, the workload and the
// fault proxy, and returns the informers' client configuration (through
// the proxy).
func (d *demo) startControlPlane(ctx context.Context) (*rest.Config, error) {
	t := time.Now()
	d.printf(">> starting etcd and kube-apiserver from the tool cache")
	var err error
	if d.env, err = controlplane.Start(controlplane.Options{LogDir: d.logDir}); err != nil {
		return nil, err
	}
	d.printf("   control plane at %s, ready in %s", d.env.Config.Host, d.since(t))
	restarts, err := d.logFile("kube-apiserver-restarted.log")
	if err != nil {
		return nil, err
	}
	if d.procs, err = d.env.Processes(restarts); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(d.dataDir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(kubeconfig, d.env.Config); err != nil {
		return nil, err
	}
	d.printf("   kubectl --kubeconfig %s get configmaps -n %s", kubeconfig, workloadNamespace)

	d.wctx, d.cancel = context.WithCancel(ctx)
	if err := workload.EnsureNamespace(ctx, d.env.Client, workloadNamespace); err != nil {
		return nil, err
	}
	go workload.Churn(d.wctx, d.env.Client, workloadNamespace, 50, d.o.rate)
	go workload.ChurnDeployments(d.wctx, d.env.Client, workloadNamespace, 5, 3*time.Second)
	d.printf("   workload: %.0f ConfigMap writes/s and a Deployment update every 3s in namespace %s", d.o.rate, workloadNamespace)
	// The informers reach kube-apiserver through the fault proxy; the head
	// probe and the canary go direct, on connections of their own.
	return d.startProxy()
}

// startMonitoring starts the receiver, Alertmanager and Prometheus.
func (d *demo) startMonitoring(ctx context.Context) error {
	t := time.Now()
	d.printf(">> starting Alertmanager and Prometheus (Debian packages)")
	d.inj = newInjector(d.proxy, d.procs, d.event, nil)
	var err error
	if d.receiver, err = startReceiver(d.notified); err != nil {
		return err
	}
	d.inj.pages = d.receiver.nextPage
	amLog, err := d.logFile("alertmanager.log")
	if err != nil {
		return err
	}
	if d.am, err = startAlertmanager(ctx, d.dataDir, d.o.alertmanagerAdr, d.receiver, amLog); err != nil {
		return err
	}
	promLog, err := d.logFile("prometheus.log")
	if err != nil {
		return err
	}
	if d.prom, err = startPrometheus(ctx, d.dataDir, d.o.prometheusAddr, d.exporter.Addr, d.o.alertmanagerAdr, promLog); err != nil {
		return err
	}
	client, err := api.NewClient(api.Config{Address: "http://" + d.o.prometheusAddr})
	if err != nil {
		return err
	}
	d.promAPI = promv1.NewAPI(client)
	d.printf("   ready in %s; rules: %s (the chart's at its defaults)", d.since(t), filepath.Join(d.dataDir, "rules.yaml"))
	d.printf("   Prometheus alerts:  http://%s/alerts", d.o.prometheusAddr)
	d.printf("   Alertmanager:       http://%s/#/alerts (routing as docs/alertmanager.yaml, group_interval %s; pages and tickets to this demo)", d.o.alertmanagerAdr, amTiming.GroupInterval)
	return nil
}

// startProxy starts the fault proxy in front of kube-apiserver and returns
// a client configuration that connects through it. Its own Host gives it
// a transport of its own, so only the informers see the proxy's faults.
func (d *demo) startProxy() (*rest.Config, error) {
	u, err := url.Parse(d.env.Config.Host)
	if err != nil {
		return nil, err
	}
	if d.proxy, err = faultproxy.Start(u.Host); err != nil {
		return nil, err
	}
	proxied := rest.CopyConfig(d.env.Config)
	u.Host = d.proxy.Addr() // the serving certificate names 127.0.0.1, whatever the port
	proxied.Host = u.String()
	return proxied, nil
}

// logFile opens a log file of the demo's log directory, appending (a
// second run with the same --log-dir goes on in the same files); stop
// closes it.
func (d *demo) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(d.logDir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		d.logs = append(d.logs, f)
	}
	return f, err
}

// notified prints what a notification to the receiver brought.
func (d *demo) notified(a arrival) {
	for _, line := range describe(a, d.inj.latest) {
		d.event("%s", line)
	}
}

// stop stops everything start started, the last first.
func (d *demo) stop() error {
	if d.cancel != nil {
		d.cancel()
	}
	// a restart under way must not start kube-apiserver after its stop
	d.faults.Wait()
	d.printf(">> stopping")
	if d.receiver != nil {
		fired, resolved := d.receiver.counts()
		d.printf("   pages: %d alerts fired, %d resolved", fired, resolved)
	}
	var errs []error
	if d.prom != nil {
		errs = append(errs, d.prom.Stop(30*time.Second))
	}
	if d.am != nil {
		errs = append(errs, d.am.Stop(30*time.Second))
	}
	if d.receiver != nil {
		errs = append(errs, d.receiver.close())
	}
	if d.exporter != nil {
		errs = append(errs, d.exporter.Stop(30*time.Second))
	}
	if d.proxy != nil {
		errs = append(errs, d.proxy.Close())
	}
	if d.procs != nil {
		// a restarted kube-apiserver is the demo's child, not envtest's
		errs = append(errs, d.procs.Stop())
	}
	if d.env != nil {
		errs = append(errs, d.env.Stop())
	}
	if d.dataDir != "" {
		errs = append(errs, os.RemoveAll(d.dataDir))
	}
	for _, f := range d.logs {
		errs = append(errs, f.Close())
	}
	err := errors.Join(errs...)
	if d.logDir != "" {
		d.printf("   logs kept in %s", d.logDir)
	}
	return err
}

// loop refreshes the table every --every and handles keys and scripted
// faults until ctx ends, q is pressed or --duration has passed.
func (d *demo) loop(ctx context.Context, keys <-chan byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		hist     scrapes
		view     *tableView
		synced   time.Time
		deadline <-chan time.Time
		tick     = time.NewTicker(d.o.every)
	)
	defer tick.Stop()
	refresh := func() error {
		if d.exporter.Exited() {
			return fmt.Errorf("the exporter exited; its log ends:\n%s", process.Tail(filepath.Join(d.logDir, "exporter.log"), 20))
		}
		m, err := scrape.Scrape(d.exporter.MetricsURL())
		if err != nil {
			d.event("scrape: %v", err)
			return nil
		}
		now := time.Now()
		v := &tableView{resources: demoResources, cur: m, base: hist.add(now, m)}
		v.alerts, v.alertsErr = alertsByResource(ctx, d.promAPI)
		if view == nil {
			d.event("first table, %s after the start", d.since(d.started))
			if d.o.duration > 0 {
				deadline = time.After(d.o.duration)
			}
		}
		view = v
		if synced.IsZero() && allSynced(m) {
			synced = now
			d.event("every informer synced, %s after the start", d.since(d.started))
			for _, f := range d.o.faults {
				d.faults.Go(func() { d.inj.run(d.wctx, synced, f) })
			}
		}
		d.draw(view)
		return nil
	}
	if err := refresh(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-deadline:
			d.event("--duration %v has passed", d.o.duration)
			return nil
		case <-tick.C:
			if err := refresh(); err != nil {
				return err
			}
		case <-d.redraw:
			if d.tty && view != nil {
				d.draw(view)
			}
		case k, ok := <-keys:
			if !ok {
				keys = nil
				continue
			}
			switch k {
			case 's':
				d.inj.toggle(faultStall, 0)
			case 'd':
				d.inj.toggle(faultSlow, defaultSlowDelay)
			case 'r':
				d.faults.Go(func() { d.inj.restart(d.wctx) })
			case 'q':
				return nil
			}
		}
	}
}

// allSynced reports whether every demo resource's informer has synced.
func allSynced(m scrape.Metrics) bool {
	for _, r := range demoResources {
		if v, _ := m.Value(catalog.InformerSynced.Name, map[string]string{catalog.LabelResource: r}); v != 1 {
			return false
		}
	}
	return true
}

// draw shows a table: on a terminal the whole screen (header, table, the
// latest events), else the table after a time line.
func (d *demo) draw(v *tableView) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	var faults []string
	if d.inj != nil {
		for k, t := range d.inj.activeKinds() {
			faults = append(faults, fmt.Sprintf("%s since %s (%s)", k, t.Format(time.TimeOnly), round(now.Sub(t))))
		}
	}
	status := "no fault"
	if len(faults) > 0 {
		status = "fault: " + strings.Join(faults, ", ")
	}
	if !d.tty {
		fmt.Fprintf(d.out, "--- %s  up %s  %s\n", now.Format(time.TimeOnly), round(now.Sub(d.started)), status)
		printTable(d.out, *v)
		return
	}
	var b strings.Builder
	b.WriteString("\033[H\033[2J")
	fmt.Fprintf(&b, "rvsync-slo demo  %s  up %s  %s\n", now.Format(time.TimeOnly), round(now.Sub(d.started)), status)
	fmt.Fprintf(&b, "Prometheus alerts http://%s/alerts   Alertmanager http://%s/#/alerts   exporter %s\n",
		d.o.prometheusAddr, d.o.alertmanagerAdr, d.exporter.MetricsURL())
	fmt.Fprintf(&b, "keys: [s] stall the informers' connection  [d] slow it by %v  [r] restart kube-apiserver  [q] quit  (s, d again: end it)   logs: %s\n\n",
		defaultSlowDelay, d.logDir)
	printTable(&b, *v)
	b.WriteString("\n")
	events := d.events[max(0, len(d.events)-12):]
	for _, e := range events {
		b.WriteString(e + "\n")
	}
	fmt.Fprint(d.out, b.String())
}
