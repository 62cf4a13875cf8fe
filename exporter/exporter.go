package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rvsync-slo/rvsync-slo/exporter/collector"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Options are what Run needs besides the Config.
type Options struct {
	Config Config
	// InformerConfig is the client configuration of the informers.
	InformerConfig *rest.Config
	// ProbeConfig is the head probe's; nil means InformerConfig. Either way
	// the probe gets a transport of its own.
	ProbeConfig *rest.Config
	// Registry receives every metric; nil makes a fresh one with the Go and
	// process collectors.
	Registry *prometheus.Registry
	Logger   logr.Logger
	Build    collector.BuildInfo
}

// Exporter is a configured, listening exporter.
type Exporter struct {
	opts    Options
	ln      net.Listener
	reg     *prometheus.Registry
	monitor *probe.Monitor
	ready   atomic.Bool
}

// New validates the config, registers the metrics and binds the listen
// address, so that configuration and address errors surface before Run.
func New(opts Options) (*Exporter, error) {
	opts.Config.Defaults()
	if err := opts.Config.ResolveShard(); err != nil {
		return nil, &ConfigError{err}
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	if opts.InformerConfig == nil {
		return nil, &ConfigError{errors.New("no client configuration")}
	}
	if opts.ProbeConfig == nil {
		opts.ProbeConfig = opts.InformerConfig
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	mon := probe.New(probe.Options{ProbeInterval: opts.Config.ProbeInterval.Duration, Logger: opts.Logger})
	if err := mon.Register(reg, &opts.Build); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Config.ListenAddress)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("listenAddress %q: %w", opts.Config.ListenAddress, err)}
	}
	return &Exporter{opts: opts, ln: ln, reg: reg, monitor: mon}, nil
}

// ConfigError is a configuration the user must fix; the command exits 2.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Addr is the address /metrics is served on.
func (e *Exporter) Addr() string { return e.ln.Addr().String() }

// Monitor is the exporter's probe.Monitor.
func (e *Exporter) Monitor() *probe.Monitor { return e.monitor }

// Run serves HTTP, resolves the resources (retrying discovery while the API
// server is unreachable), starts their informers and the head probes, and
// blocks until ctx ends. It returns an *UnknownResourceError wrapped in a
// ConfigError when a configured resource does not exist.
func (e *Exporter) Run(ctx context.Context) error {
	log := e.opts.Logger
	srv, err := e.server()
	if err != nil {
		return &ConfigError{err}
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
	log.Info("serving metrics", "address", e.Addr())

	resolved, err := e.resolve(ctx)
	if err != nil {
		return err
	}
	clients, err := newClients(e.opts.InformerConfig, e.opts.ProbeConfig)
	if err != nil {
		return &ConfigError{err}
	}
	byName := map[string]Resolved{}
	for _, r := range resolved {
		byName[r.Name] = r
	}
	canaries, err := e.canaries(clients.canary, byName)
	if err != nil {
		return err
	}
	for _, r := range resolved {
		tr := e.monitor.Track(r.Name, r.Space)
		var inf cache.SharedIndexInformer
		if r.TracksConvergence() {
			inf = e.monitor.NewConvergenceInformer(clients.dynamic, r.GVR, tr, r.ObservedGenerationPath)
		} else {
			inf = e.monitor.NewMetadataInformer(clients.metadata, r.GVR, tr)
		}
		e.monitor.AddHeadSource(r.Space, r.Name, probe.MetadataHead(clients.probe, r.GVR))
		go inf.RunWithContext(ctx)
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
	go func() { probeErr <- e.monitor.Run(ctx) }()
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

// server builds the HTTP server, with secure serving when configured.
func (e *Exporter) server() (*http.Server, error) {
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	var guard func(http.Handler) (http.Handler, error)
	if e.opts.Config.SecureMetrics {
		var err error
		srv.TLSConfig, guard, err = secureServing(e.opts.ProbeConfig, e.opts.Config.MetricsCertDir, e.opts.Logger)
		if err != nil {
			return nil, err
		}
	}
	mux, err := newMux(e.reg, &e.ready, guard)
	if err != nil {
		return nil, err
	}
	srv.Handler = mux
	return srv, nil
}

// canaries builds one canary per configured canary resource.
func (e *Exporter) canaries(client dynamic.Interface, byName map[string]Resolved) ([]*probe.Canary, error) {
	cc := e.opts.Config.Canary
	if !cc.On() {
		return nil, nil
	}
	var out []*probe.Canary
	for _, n := range cc.Resources {
		r, mine := byName[n]
		if !mine {
			continue // another shard watches it, and runs its canary
		}
		if !r.Namespaced {
			return nil, &ConfigError{fmt.Errorf("canary.resources: %s is cluster-scoped; a canary object must be namespaced", n)}
		}
		c, err := e.monitor.NewCanary(client, e.monitor.Track(n, r.Space), probe.CanaryOptions{
			GVR: r.GVR, APIVersion: r.GVR.GroupVersion().String(), Kind: r.Kind,
			Namespace: cc.Namespace, Name: cc.Name, Interval: cc.Interval.Duration, Deadline: cc.Deadline.Duration,
		})
		if err != nil {
			return nil, &ConfigError{err}
		}
		out = append(out, c)
	}
	return out, nil
}

// resolve retries discovery until it answers, then maps the configured names.
func (e *Exporter) resolve(ctx context.Context) ([]Resolved, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.opts.ProbeConfig)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("discovery client: %w", err)}
	}
	var resolved []Resolved
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * time.Second}
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		var rerr error
		resolved, rerr = Resolve(dc, e.opts.Config.OwnResources())
		var unknown *UnknownResourceError
		switch {
		case rerr == nil:
			return true, nil
		case errors.As(rerr, &unknown):
			return false, &ConfigError{rerr}
		}
		e.opts.Logger.Info("discovery failed; retrying", "err", rerr)
		return false, nil
	})
	return resolved, err
}

// clients are the API clients of one exporter: the informers share one
// connection; the head probe and the canary each get their own.
type clients struct {
	metadata metadata.Interface
	dynamic  dynamic.Interface
	probe    metadata.Interface
	canary   dynamic.Interface
}

func newClients(informer, probeCfg *rest.Config) (*clients, error) {
	var c clients
	var err error
	if c.metadata, err = metadata.NewForConfig(tuned(informer)); err != nil {
		return nil, fmt.Errorf("informer client: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(tuned(informer)); err != nil {
		return nil, fmt.Errorf("informer client: %w", err)
	}
	if c.probe, err = metadata.NewForConfig(probe.OwnConnection(probeCfg)); err != nil {
		return nil, fmt.Errorf("probe client: %w", err)
	}
	if c.canary, err = dynamic.NewForConfig(probe.OwnConnection(probeCfg)); err != nil {
		return nil, fmt.Errorf("canary client: %w", err)
	}
	return &c, nil
}

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
