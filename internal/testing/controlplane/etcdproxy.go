package controlplane

import (
	"errors"
	"net/url"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// proxyEtcd puts envtest's kube-apiserver (server 0), whose flags are
// args, behind etcd proxies of its own (Options.EtcdProxies), which
// startHA hands to its server 0. envtest chooses its etcd's port only when
// it starts it, after kube-apiserver's flags are set, so a single etcd's
// client URL is chosen here, as newEtcdCluster chooses its members'.
func (e *Env) proxyEtcd(etcd *envtest.Etcd, args *envtest.Arguments) error {
	if e.Etcd != nil {
		e.etcdServers = e.Etcd.Endpoints()
	} else {
		addr, err := process.FreeAddr()
		if err != nil {
			return err
		}
		etcd.URL = &url.URL{Scheme: "http", Host: addr}
		e.etcdServers = etcd.URL.String()
	}
	_, through, err := e.startEtcdProxies(e.etcdServers)
	if err != nil {
		return err
	}
	args.Set("etcd-servers", through)
	return nil
}

// startEtcdProxies starts a TCP fault proxy in front of each etcd client
// URL of endpoints (kube-apiserver's --etcd-servers: plaintext
// http://host:port, comma-separated) and returns them, in that order, with
// the --etcd-servers value that reaches etcd through them. e closes them
// when it stops.
func (e *Env) startEtcdProxies(endpoints string) ([]*faultproxy.Proxy, string, error) {
	var proxies []*faultproxy.Proxy
	var through []string
	for ep := range strings.SplitSeq(endpoints, ",") {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, "", err
		}
		if u.Host == "" {
			return nil, "", errors.New("etcd endpoint without host:port: " + ep)
		}
		p, err := faultproxy.Start(u.Host)
		if err != nil {
			return nil, "", err
		}
		e.etcdProxies = append(e.etcdProxies, p)
		proxies = append(proxies, p)
		u.Host = p.Addr()
		through = append(through, u.String())
	}
	return proxies, strings.Join(through, ","), nil
}

// StallEtcd stops every byte between the server and etcd, both ways, on
// its connections to every member, present and future (faultproxy's
// Stall): its watch caches stop following etcd, and its requests that
// reach etcd hang, while the other API servers go on. Only for a control
// plane started with Options.EtcdProxies; see docs/testing.md for what the
// real server does then.
func (s *APIServer) StallEtcd() {
	for _, p := range s.EtcdProxies {
		p.Stall()
	}
}

// ReleaseEtcd ends StallEtcd: the held bytes flow on.
func (s *APIServer) ReleaseEtcd() {
	for _, p := range s.EtcdProxies {
		p.Release()
	}
}
