package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/lb"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
)

// HA is an HA control plane's API servers: several kube-apiservers on one
// etcd (or one etcd cluster), each with its own watch cache, and the
// round-robin TCP load balancer in front of them that clients reach, as a
// kubeadm HA control plane or a managed one runs them. Server 0 is the one
// envtest starts (found in /proc); the others run with its flags,
// certificates and service-account keys on ports of their own, so a token
// or client certificate one accepts, every one accepts.
type HA struct {
	// Servers are the API servers, in the balancer's round-robin order.
	Servers []*APIServer
	// Balancer is in front of them; Env.Config dials it.
	Balancer *lb.Balancer
}

// APIServer is one kube-apiserver of an HA control plane.
type APIServer struct {
	// Name is kube-apiserver-<i>.
	Name string
	// Host is its own https://127.0.0.1:<port>, bypassing the balancer.
	Host    string
	Process *process.Process
	// Backend is its entry in the balancer.
	Backend *lb.Backend
	// EtcdProxies are the fault proxies it reaches etcd through, one per
	// --etcd-servers endpoint in that order, with Options.EtcdProxies;
	// else nil (see StallEtcd).
	EtcdProxies []*faultproxy.Proxy
	ready       *rest.RESTClient
}

// AuditLog is where server i of an HA control plane writes its audit log
// when Options.APIServerArgs set --audit-log-path to path: server 0 at
// path, the others beside it, so a test knows which server served what.
func AuditLog(path string, i int) string {
	if i == 0 {
		return path
	}
	return path + "." + strconv.Itoa(i)
}

// startHA starts n-1 more API servers beside envtest's and a balancer in
// front of the n.
func startHA(e *Env, n int, logDir string) (*HA, error) {
	cp := e.Environment.ControlPlane
	first, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, err
	}
	p0, err := process.FindProcess(cp.APIServer.Path, "--secure-port="+first.Port())
	if err != nil {
		return nil, err
	}
	h := &HA{}
	for i := range n {
		s := &APIServer{Name: "kube-apiserver-" + strconv.Itoa(i), Process: p0, Host: e.Config.Host}
		if i == 0 {
			// proxyEtcd's, the only ones yet
			s.EtcdProxies = slices.Clone(e.etcdProxies)
			if logDir != "" {
				p0.Log = cp.APIServer.Out // a restart of server 0 goes on in its log
			}
		} else {
			addr, err := process.FreeAddr()
			if err != nil {
				return nil, err
			}
			_, port, _ := strings.Cut(addr, ":")
			etcdServers := ""
			if e.etcdServers != "" {
				if s.EtcdProxies, etcdServers, err = e.startEtcdProxies(e.etcdServers); err != nil {
					return nil, err
				}
			}
			args := slices.Clone(p0.Args)
			for j, a := range args {
				switch {
				case strings.HasPrefix(a, "--secure-port="):
					args[j] = "--secure-port=" + port
				case strings.HasPrefix(a, "--audit-log-path="):
					args[j] = "--audit-log-path=" + AuditLog(strings.TrimPrefix(a, "--audit-log-path="), i)
				case strings.HasPrefix(a, "--etcd-servers=") && etcdServers != "":
					args[j] = "--etcd-servers=" + etcdServers
				}
			}
			s.Host = "https://127.0.0.1:" + port
			s.Process = &process.Process{Path: p0.Path, Args: args}
			if logDir != "" {
				if s.Process.Log, err = e.logFile(logDir, s.Name); err != nil {
					return nil, err
				}
			}
		}
		direct := rest.CopyConfig(e.Config)
		direct.Host = s.Host
		c, err := kubernetes.NewForConfig(direct)
		if err != nil {
			return nil, err
		}
		s.ready = c.Discovery().RESTClient().(*rest.RESTClient)
		h.Servers = append(h.Servers, s)
	}
	for _, s := range h.Servers[1:] {
		if err := s.Process.Start(); err != nil {
			_ = h.stop()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range h.Servers[1:] {
		if err := s.waitReady(ctx); err != nil {
			_ = h.stop()
			return nil, err
		}
	}
	var addrs []string
	for _, s := range h.Servers {
		u, _ := url.Parse(s.Host)
		addrs = append(addrs, u.Host)
	}
	if h.Balancer, err = lb.Start(addrs...); err != nil {
		_ = h.stop()
		return nil, err
	}
	for i, be := range h.Balancer.Backends() {
		h.Servers[i].Backend = be
	}
	return h, nil
}

// Config returns a copy of cfg that reaches the API servers through the
// balancer. The serving certificate names 127.0.0.1, whatever the port.
func (h *HA) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + h.Balancer.Addr()
	return c
}

// Direct returns a copy of cfg that reaches server i alone, bypassing the
// balancer (forcing a client onto one API server).
func (h *HA) Direct(cfg *rest.Config, i int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = h.Servers[i].Host
	return c
}

// Restart restarts server i as a rolling upgrade does: out of the
// balancer's rotation first, then stopped (SIGTERM, which ends its
// watches, SIGKILL after a grace period), started again with the same
// flags, and back in rotation once ready.
func (h *HA) Restart(ctx context.Context, i int) error {
	s := h.Servers[i]
	s.Backend.Drain()
	if err := s.Process.Stop(apiServerGrace); err != nil {
		return err
	}
	if err := s.Process.Start(); err != nil {
		return err
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	s.Backend.Undrain()
	return nil
}

// WatchCacheRV reads the resource version of the server's watch cache of
// group/resource (the core group "") from its own /metrics
// (apiserver_watch_cache_resource_version, ALPHA on 1.34-1.37; see
// docs/apiserver-metrics.md). It fails while the server has no such cache.
// A server cut off etcd (StallEtcd) answers /metrics late, without
// apiserver_storage_size_bytes: 1.34.4 after about 20 s (each scrape
// dials a new etcd client for it, with a 20 s dial timeout), 1.37.2 after
// about 1 s (its etcd status call's timeout).
func (s *APIServer) WatchCacheRV(ctx context.Context, group, resource string) (uint64, error) {
	raw, err := s.ready.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.Name, err)
	}
	const family = "apiserver_watch_cache_resource_version"
	m, err := scrape.Families(raw, family)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.Name, err)
	}
	v, ok := m.Value(family, map[string]string{"group": group, "resource": resource})
	if !ok {
		return 0, fmt.Errorf("%s serves no %s{group=%q,resource=%q}", s.Name, family, group, resource)
	}
	return uint64(v), nil
}

// waitReady polls the server's /readyz until it answers ok.
func (s *APIServer) waitReady(ctx context.Context) error {
	return process.Poll(ctx, s.Name+" ready", func(ctx context.Context) error {
		if s.Process.Exited() {
			return fmt.Errorf("%s: %w", s.Name, process.ErrExited)
		}
		return s.ready.Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// stop closes the balancer and stops every API server, each with its
// etcd released first so that it shuts down as it would on its own (Env
// closes the proxies after).
func (h *HA) stop() error {
	var errs []error
	if h.Balancer != nil {
		errs = append(errs, h.Balancer.Close())
	}
	for _, s := range h.Servers {
		s.ReleaseEtcd()
		errs = append(errs, s.Process.Stop(apiServerGrace))
	}
	return errors.Join(errs...)
}
