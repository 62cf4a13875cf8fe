package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/exporter/internal/readbatch"
	"github.com/rvsync-slo/rvsync-slo/exporter/internal/resolve"
	"github.com/rvsync-slo/rvsync-slo/exporter/internal/server"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// options are what run needs besides the Config.
type options struct {
	Config config.Config
	// InformerConfig is the client configuration of the informers.
	InformerConfig *rest.Config
	// ProbeConfig is the head probe's; nil means InformerConfig. Either way
	// the probe gets a transport of its own.
	ProbeConfig *rest.Config
	// Registry receives every metric; nil makes a fresh one with the Go and
	// process collectors.
	Registry *prometheus.Registry
	Logger   logr.Logger
	Build    BuildInfo
}

// exporter is a configured, listening exporter.
type exporter struct {
	opts    options
	ln      net.Listener
	reg     *prometheus.Registry
	monitor *probe.Monitor
	ready   atomic.Bool
}

// newExporter validates the config, registers the metrics and binds the
// listen address, so that configuration and address errors surface before
// run.
func newExporter(opts options) (*exporter, error) {
	opts.Config.Defaults()
	if err := opts.Config.ResolveShard(); err != nil {
		return nil, &configError{err}
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, &configError{err}
	}
	if opts.InformerConfig == nil {
		return nil, &configError{errors.New("no client configuration")}
	}
	if opts.ProbeConfig == nil {
		opts.ProbeConfig = opts.InformerConfig
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	mon := probe.New(probe.Options{
		ProbeInterval: opts.Config.ProbeInterval.Duration, Logger: opts.Logger, HeadProbe: opts.ProbeConfig,
		NoFreshnessReads: opts.Config.FreshnessReads != nil && !*opts.Config.FreshnessReads,
	})
	if err := mon.Register(reg); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if err := reg.Register(opts.Build.collector()); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Config.ListenAddress)
	if err != nil {
		return nil, &configError{fmt.Errorf("listenAddress %q: %w", opts.Config.ListenAddress, err)}
	}
	return &exporter{opts: opts, ln: ln, reg: reg, monitor: mon}, nil
}

// configError is a configuration the user must fix; the command exits 2.
type configError struct{ Err error }

func (e *configError) Error() string { return e.Err.Error() }
func (e *configError) Unwrap() error { return e.Err }

// addr is the address /metrics is served on.
func (e *exporter) addr() string { return e.ln.Addr().String() }

// run serves HTTP, resolves the resources (retrying discovery while the API
// server is unreachable), starts their informers and the head probes, and
// blocks until ctx ends. It returns a configError when a configured
// resource does not exist.
func (e *exporter) run(ctx context.Context) error {
	log := e.opts.Logger
	srv, err := server.New(server.Options{
		Gatherer: e.reg, Ready: &e.ready, Logger: log,
		Secure: e.opts.Config.SecureMetrics, CertDir: e.opts.Config.MetricsCertDir, Auth: e.opts.ProbeConfig,
	})
	if err != nil {
		return &configError{err}
	}
	srvErr := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			srvErr <- srv.ServeTLS(e.ln, "", "")
		} else {
			srvErr <- srv.Serve(e.ln)
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving metrics", "address", e.addr())

	resolved, err := e.resolve(ctx)
	if err != nil {
		return err
	}
	informerCfg, err := readbatch.Config(tuned(e.opts.InformerConfig), informerReadBatch)
	if err != nil {
		return err
	}
	for _, r := range resolved {
		res := probe.Resource{GVR: r.GVR, Space: r.Space}
		if r.TracksConvergence() {
			res.ObservedGenerationPath = cmp.Or(r.ObservedGenerationPath, config.DefaultObservedGenerationPath)
		}
		inf, err := e.monitor.NewInformer(informerCfg, res)
		if err != nil {
			return &configError{err}
		}
		go inf.RunWithContext(ctx)
	}
	canaries, err := e.canaries(resolved)
	if err != nil {
		return err
	}
	canaryCtx, stopCanaries := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { // canaries delete their objects on the way out
		stopCanaries()
		wg.Wait()
	}()
	for _, c := range canaries {
		wg.Go(func() { c.Run(canaryCtx) })
	}
	e.ready.Store(true)
	log.Info("watching", "resources", len(resolved))
	probeErr := make(chan error, 1)
	go func() { probeErr <- e.monitor.Start(ctx) }()
	select {
	case <-ctx.Done():
		<-probeErr
		return nil
	case err := <-srvErr:
		return fmt.Errorf("metrics server: %w", err)
	case err := <-probeErr:
		return err
	}
}

// canaries builds one canary per configured canary resource this shard
// watches.
func (e *exporter) canaries(resolved []resolve.Resolved) ([]*probe.Canary, error) {
	cc := e.opts.Config.Canary
	if !cc.On() {
		return nil, nil
	}
	var out []*probe.Canary
	for _, n := range cc.Resources {
		i := slices.IndexFunc(resolved, func(r resolve.Resolved) bool { return r.Name == n })
		if i < 0 {
			continue // another shard watches it, and runs its canary
		}
		r := resolved[i]
		if !r.Namespaced {
			return nil, &configError{fmt.Errorf("canary.resources: %s is cluster-scoped; a canary object must be namespaced", n)}
		}
		c, err := e.monitor.NewCanary(e.opts.ProbeConfig, probe.CanaryOptions{
			GVR: r.GVR, Kind: r.Kind,
			Namespace: cc.Namespace, Name: cc.Name, Interval: cc.Interval.Duration, Deadline: cc.Deadline.Duration,
			OwnerReferences: podOwner(cc.Namespace),
		})
		if err != nil {
			return nil, &configError{err}
		}
		out = append(out, c)
	}
	return out, nil
}

// resolve retries discovery until it answers, then maps the configured names.
func (e *exporter) resolve(ctx context.Context) ([]resolve.Resolved, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.opts.ProbeConfig)
	if err != nil {
		return nil, &configError{fmt.Errorf("discovery client: %w", err)}
	}
	var resolved []resolve.Resolved
	var last error
	host := e.opts.ProbeConfig.Host
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * time.Second}
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		resolved, last = resolve.Resolve(dc, e.opts.Config.OwnResources())
		var unknown *resolve.UnknownResourceError
		switch {
		case last == nil:
			return true, nil
		case errors.As(last, &unknown):
			return false, &configError{last}
		}
		e.opts.Logger.Error(last, "cannot reach the API server's discovery to resolve the watched resources; retrying (up to every 30s)", "server", host)
		return false, nil
	})
	if err != nil && last != nil && ctx.Err() != nil {
		// stopped before the API server ever answered: say what was awaited, and where
		return nil, fmt.Errorf("stopped while waiting for the API server at %s to answer discovery (needed to resolve the watched resources): %w", host, last)
	}
	return resolved, err
}

// informerReadBatch is how long the informers' connection waits after a
// read that drained it before it reads again: the events of that time are
// read, decoded and applied with one wake-up instead of one each (and, on
// Linux, what arrives meanwhile wakes nobody), which halves the exporter's
// CPU per event or more (0.64x at 200 events/s and 0.58x at 1,000/s for
// the batches, 0.80x and 0.64x more for the held wake-ups, side by side:
// docs/benchmarks.md, #31); each delivery (and so the canary's latency)
// comes up to this much later.
const informerReadBatch = 20 * time.Millisecond

// tuned raises client-side rate limits so that starting many informers at
// once is not throttled by the client (the API server's own priority and
// fairness still applies).
func tuned(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	if c.QPS == 0 {
		c.QPS, c.Burst = 50, 100
	}
	return c
}

// podOwner returns the exporter's pod as the owner of a canary object in
// namespace, when the downward API names the pod (the chart sets POD_NAME,
// POD_NAMESPACE and POD_UID) and the object lives in the pod's namespace:
// owner references cannot cross namespaces. blockOwnerDeletion stays unset,
// so no extra RBAC is needed.
func podOwner(namespace string) []metav1.OwnerReference {
	name, ns, uid := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"), os.Getenv("POD_UID")
	if name == "" || uid == "" || ns != namespace {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}}
}
