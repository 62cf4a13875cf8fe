package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// Options configure a control plane.
type Options struct {
	// APIServerArgs are extra kube-apiserver flags, e.g. {"watch-cache": "false"}.
	APIServerArgs map[string]string
	// EtcdArgs are extra etcd flags; they override the defaults.
	EtcdArgs map[string]string
	// EtcdMembers above 1 runs etcd as a cluster of that many members (see
	// EtcdCluster) and gives kube-apiserver all of them; 0 or 1 runs one.
	EtcdMembers int
	// APIServers above 1 runs that many kube-apiservers on the same etcd,
	// each with its own watch cache, behind a round-robin TCP load balancer
	// (see HA); Config then reaches them through the balancer. 0 or 1 runs one.
	APIServers int
	// EtcdProxies, with APIServers above 1, puts TCP fault proxies of its
	// own between each API server, envtest's server 0 included, and etcd:
	// one per --etcd-servers endpoint (each cluster member), so that a
	// test stalls one server's etcd connections (APIServer.StallEtcd), and
	// with them its watch caches, while the other servers go on. The etcd
	// of EtcdOverrides is reached directly. Start fails with it and one
	// API server. Off, every server dials etcd itself.
	EtcdProxies bool
	// EtcdOverrides are resources kube-apiserver stores in an etcd of
	// their own (--etcd-servers-overrides), as large clusters store
	// events: each "group/resource", the core group empty ("/events").
	// One more single-member etcd holds them all (Env.OverrideEtcd), run
	// with EtcdArgs too; their resource versions are its revisions, a
	// counter unrelated to the main etcd's.
	EtcdOverrides []string
	// OverrideEtcdRevision is the revision the etcd of EtcdOverrides
	// reaches before kube-apiserver starts (one key written over and
	// over), so that its resource versions stand that far above the main
	// etcd's; 0 leaves it where a new etcd starts, at 1.
	OverrideEtcdRevision int64
	// LogDir, if set, receives the output of kube-apiserver as
	// kube-apiserver.log (kube-apiserver-<i>.log for the others of an HA
	// control plane) and of each etcd cluster member as <member>.log;
	// unset, a directory of the control plane's own does, which Stop
	// removes.
	LogDir string
}

// Env is a running etcd + kube-apiserver.
type Env struct {
	Environment *envtest.Environment
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// Etcd is the etcd cluster when Options.EtcdMembers > 1, else nil.
	Etcd *EtcdCluster
	// HA is the API servers and their balancer when Options.APIServers > 1,
	// else nil.
	HA *HA
	// OverrideEtcd is the etcd of Options.EtcdOverrides, else nil.
	OverrideEtcd *EtcdMember
	// etcdServers is kube-apiserver's --etcd-servers as etcd serves it,
	// when Options.EtcdProxies puts proxies in front of it.
	etcdServers string
	// etcdProxies are every API server's etcd proxies
	// (Options.EtcdProxies); Stop closes them after the API servers.
	etcdProxies []*faultproxy.Proxy
	// dir holds the data of envtest's etcd and of OverrideEtcd and
	// kube-apiserver's certificates, so that every process a start ran
	// names it (see sweep); Stop removes it.
	dir string
	// etcdDir holds the data of the cluster members envtest does not run.
	etcdDir string
	// logDir holds the processes' output when the caller gave no
	// Options.LogDir; Stop removes it.
	logDir string
	logs   []*os.File
}

// logFile opens dir/name.log for a process's output, appending (a
// restarted process goes on in the same file); Stop closes it.
func (e *Env) logFile(dir, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		e.logs = append(e.logs, f)
	}
	return f, err
}

// startTries is how many control planes Start starts, each on ports of
// its own, before it gives up. envtest retries a failed start itself, but
// on the ports it chose first, and a kube-apiserver that crashed still
// holds its port while it shuts down: every retry failed alike (the gate
// saw "retried 5 times" in 85 s, then "address already in use" after an
// API server exited on a post-start hook's timeout). A port taken by
// another process meanwhile did the same before process.FreeAddr marked
// its ports for envtest.
const startTries = 3

// Start starts a control plane. Stop it with Stop. When one fails to
// start, it starts another on new ports; the error says why the last
// failed, with the end of its kube-apiserver's output.
func Start(opts Options) (*Env, error) {
	var errs []error
	for range startTries {
		e, err := start(opts)
		if err == nil {
			return e, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errStart) {
			break
		}
	}
	if len(errs) > 1 {
		return nil, fmt.Errorf("%d control planes failed to start, the last: %w", len(errs), errs[len(errs)-1])
	}
	return nil, errs[0]
}

// startLockWait bounds the wait for the other control planes starting on
// this machine: a start takes seconds, a dozen of them a few minutes.
const startLockWait = 15 * time.Minute

// startTimeout bounds each start of etcd and of kube-apiserver that
// envtest tries; tests of a start that fails shorten it.
var startTimeout = 2 * time.Minute

// errStart marks a control plane whose processes did not start (worth
// another try on new ports), as opposed to a missing binary or directory.
var errStart = errors.New("start control plane")

func start(opts Options) (*Env, error) {
	if opts.EtcdProxies && opts.APIServers < 2 {
		return nil, errors.New("Options.EtcdProxies needs APIServers above 1: only an HA control plane's servers can be stalled apart")
	}
	apiserver, etcd, err := Binaries()
	if err != nil {
		return nil, err
	}
	// kube-apiserver's output, to say why it did not start: in the
	// caller's directory, or in one of ours that Stop removes
	own := opts.LogDir == ""
	if own {
		if opts.LogDir, err = os.MkdirTemp("", "rvsync-controlplane-"); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "rvsync-controlplane-run-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: apiserver, CertDir: filepath.Join(dir, "kube-apiserver")},
			Etcd:      &envtest.Etcd{Path: etcd, DataDir: filepath.Join(dir, "etcd")},
		},
		// envtest gives these to etcd and kube-apiserver, over their own
		// (it defaults them to 20 s): a kube-apiserver starting on a
		// loaded 2-core machine takes longer, and each start it missed
		// was a failure retried on the same ports
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	e := &Env{Environment: env, dir: dir}
	if own {
		e.logDir = opts.LogDir
	}
	for _, d := range []string{env.ControlPlane.APIServer.CertDir, env.ControlPlane.Etcd.DataDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	f, err := e.logFile(opts.LogDir, "kube-apiserver")
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	env.ControlPlane.APIServer.Out, env.ControlPlane.APIServer.Err = f, f
	args := env.ControlPlane.APIServer.Configure()
	for k, v := range opts.APIServerArgs {
		args.Set(k, v)
	}
	// As kubeadm and managed control planes configure it: etcd reports watch
	// progress every 5s, so the watch cache of a resource nobody writes keeps
	// its RV current and the ~1/min bookmarks carry it to the informers.
	// With etcd's 10m default, a quiet resource's bookmarks carry an RV up
	// to minutes old (see README, "Requirements").
	etcdArgs := map[string]string{"watch-progress-notify-interval": "5s"}
	maps.Copy(etcdArgs, opts.EtcdArgs)
	if opts.EtcdMembers > 1 {
		if e.etcdDir, err = os.MkdirTemp("", "rvsync-etcd-"); err != nil {
			return nil, err
		}
		var logs func(string) (*os.File, error)
		if opts.LogDir != "" {
			logs = func(member string) (*os.File, error) { return e.logFile(opts.LogDir, member) }
		}
		if e.Etcd, err = newEtcdCluster(env.ControlPlane.Etcd, opts.EtcdMembers, etcdArgs, e.etcdDir, logs); err != nil {
			_ = os.RemoveAll(e.etcdDir)
			return nil, err
		}
		args.Set("etcd-servers", e.Etcd.Endpoints())
	} else {
		for k, v := range etcdArgs {
			env.ControlPlane.Etcd.Configure().Set(k, v)
		}
	}
	if opts.EtcdProxies {
		if err := e.proxyEtcd(env.ControlPlane.Etcd, args); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if len(opts.EtcdOverrides) > 0 {
		flag, err := e.startOverrideEtcd(etcd, opts.EtcdOverrides, etcdArgs, opts.OverrideEtcdRevision, opts.LogDir)
		if err != nil {
			_ = e.Stop()
			return nil, err
		}
		args.Set("etcd-servers-overrides", flag)
	}
	// one control plane starts at a time on this machine: kube-apiserver
	// exits when its post-start hooks time out (the gate saw "PostStartHook
	// priority-and-fairness-config-producer failed: timed out" with two
	// gates side by side, a dozen API servers starting at once on 2 cores)
	lockCtx, cancel := context.WithTimeout(context.Background(), startLockWait)
	lock, err := process.LockHost(lockCtx, filepath.Join(os.TempDir(), "rvsync-controlplane-start.lock"), "another control plane is starting", nil)
	cancel()
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	defer lock.Unlock()
	cfg, err := env.Start()
	if err != nil {
		out := process.Tail(filepath.Join(opts.LogDir, "kube-apiserver.log"), 8)
		// every process of the failed start ends now: envtest's Stop
		// below then finds its own ended and removes their directories
		serr := e.sweep()
		_ = e.Stop()
		return nil, fmt.Errorf("%w: %w; kube-apiserver's last output:\n%s", errStart, errors.Join(err, serr), out)
	}
	e.Config = cfg
	if e.Etcd != nil {
		if err := e.Etcd.adoptFirst(env.ControlPlane.Etcd); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if opts.APIServers > 1 {
		if e.HA, err = startHA(e, opts.APIServers, opts.LogDir); err != nil {
			_ = e.Stop()
			return nil, err
		}
		e.Config = e.HA.Config(cfg)
	}
	if e.Client, err = kubernetes.NewForConfig(e.Config); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops the control plane. With an etcd cluster, kube-apiserver stops
// first (while etcd still answers), then every member, whether envtest or
// a restart started it; envtest then finds its processes ended and only
// removes their directories.
func (e *Env) Stop() error {
	var errs []error
	if e.HA != nil {
		// every API server, envtest's too, while etcd still answers
		errs = append(errs, e.HA.stop())
	}
	if e.Etcd != nil {
		errs = append(errs, e.Environment.ControlPlane.APIServer.Stop(), e.Etcd.Stop())
	}
	errs = append(errs, e.Environment.Stop())
	if e.OverrideEtcd != nil && e.OverrideEtcd.Process != nil {
		// after kube-apiserver, which envtest stopped
		errs = append(errs, e.OverrideEtcd.Process.Stop(etcdMemberGrace))
	}
	for _, p := range e.etcdProxies {
		errs = append(errs, p.Close())
	}
	if e.etcdDir != "" {
		errs = append(errs, os.RemoveAll(e.etcdDir))
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	for _, f := range e.logs {
		errs = append(errs, f.Close())
	}
	if e.logDir != "" {
		errs = append(errs, os.RemoveAll(e.logDir))
	}
	return errors.Join(errs...)
}

// sweep kills what a failed start left running. envtest retries a start
// that failed five times on the same ports, and forgets a kube-apiserver
// that missed its start timeout after one SIGTERM: under load one that
// took longer than that to end outlived its control plane (the gate's demo
// test found it alive a minute after the demo had exited). Every process
// of the start names e.dir in its arguments; none of them is wanted now.
func (e *Env) sweep() error {
	left, err := process.Naming(e.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range left {
		if err := p.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("a process of the failed start: %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// EtcdURL is the client URL of etcd.
func (e *Env) EtcdURL() *url.URL { return e.Environment.ControlPlane.Etcd.URL }

// Proxy starts a fault proxy in front of the API server of cfg and returns
// it with a copy of cfg that connects through it. A different Host gives the
// copy its own transport, so only clients built from it see the proxy's
// faults. Close the proxy when done.
func Proxy(cfg *rest.Config) (*faultproxy.Proxy, *rest.Config, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, err
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		return nil, nil, err
	}
	proxied := rest.CopyConfig(cfg)
	u.Host = p.Addr()
	proxied.Host = u.String()
	// the serving certificate names 127.0.0.1 and localhost, whatever the port
	return p, proxied, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file: server, CA, client
// certificate or bearer token, and impersonation.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName,
	}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile,
		Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.WriteToFile(*kc, path)
}
