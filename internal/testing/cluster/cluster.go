package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	discoveryv1client "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// Options configure a cluster.
type Options struct {
	// Logf receives progress lines (e.g. t.Logf); nil discards them.
	Logf func(format string, args ...any)
	// LogDir receives each component's output as <component>.log; empty:
	// a logs directory in the cluster's own, removed on Stop.
	LogDir string
	// NodeIP is the node's address, which pods reach the host at; empty:
	// the first global unicast IPv4 address of an interface that is up.
	NodeIP string
	// Images are image tarballs imported into containerd before kubelet
	// starts, so pods run them without a registry (the pause image is
	// always built and imported).
	Images []string
	// APIServers above 1 runs that many kube-apiservers on the etcd, as an
	// HA control plane does, and gives the kubernetes Service an endpoint
	// for each: pods reach them through kube-proxy, which balances per
	// connection. The node's components and Kubeconfig use the first.
	APIServers int
}

// Cluster is a running single-node cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kube-proxy, containerd with
// runc, and kubelet, with a CNI bridge whose pod IPs the host reaches.
type Cluster struct {
	// Dir holds everything of the cluster's own: data, certificates,
	// configuration, containerd's and kubelet's state.
	Dir string
	// Kubeconfig is an admin (system:masters) kubeconfig file.
	Kubeconfig string
	// Config is the admin client configuration; Client an admin clientset.
	Config *rest.Config
	Client kubernetes.Interface
	// NodeIP is the node's address: pods reach the host (and the API
	// server) there.
	NodeIP string
	// APIServerPort is kube-apiserver's port, on every host address.
	APIServerPort int
	// APIServerPorts are the ports of every kube-apiserver (Options.APIServers),
	// APIServerPort first.
	APIServerPorts []int
	// LogDir holds each component's log.
	LogDir string

	ca    *ca
	st    *state
	lock  *process.HostLock
	procs []*component
	logf  func(string, ...any)
	// apiservers are the kube-apiservers, in APIServerPorts' order.
	apiservers []*component
}

// component is one running program of the cluster.
type component struct {
	name string
	*process.Process
	grace time.Duration
}

// Start starts a cluster; Stop stops it and undoes every change to the
// host. It waits while another cluster runs on this machine, until ctx
// ends, and first
// undoes a cluster whose process died without stopping it.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("a cluster needs root (kubelet, containerd, the CNI bridge and iptables)")
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	// however long another cluster holds the machine (another gate's
	// tests take it in turn): ctx bounds the wait
	lock, err := process.LockHost(ctx, lockFile, "another cluster runs on this machine", logf)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && c == nil {
			_ = lock.Unlock()
		}
	}()
	if err := recoverCrashed(logf); err != nil {
		return nil, err
	}
	nodeIP := opts.NodeIP
	if nodeIP == "" {
		if nodeIP, err = defaultNodeIP(); err != nil {
			return nil, err
		}
	}
	before, err := readHost()
	if err != nil {
		return nil, fmt.Errorf("read the host's state: %w", err)
	}
	dir, err := os.MkdirTemp("", "rvsync-cluster-")
	if err != nil {
		return nil, err
	}
	st := &state{Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), Bridge: BridgeName, Before: before}
	if err := st.save(); err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, NodeIP: nodeIP, LogDir: cmpOr(opts.LogDir, filepath.Join(dir, "logs")), st: st, lock: lock, logf: logf}
	defer func() {
		if err != nil {
			err = errors.Join(err, fmt.Errorf("logs in %s", c.LogDir), c.Stop())
			c = nil
		}
	}()
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return c, err
	}
	start := time.Now()
	if err := c.start(ctx, bins, opts.Images, max(1, opts.APIServers)); err != nil {
		return c, err
	}
	logf("cluster up in %v: node %s at %s, API server https://127.0.0.1:%d, kubeconfig %s",
		time.Since(start).Round(time.Second), NodeName, nodeIP, c.APIServerPort, c.Kubeconfig)
	return c, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// binaries are the programs a cluster runs.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler, proxy, kubelet string
	containerd, ctr                                               string
}

// findBinaries finds the control plane and node binaries that `make
// testbin` builds (the Kubernetes ones next to kube-apiserver, one
// version) and the Debian packages' containerd, runc and CNI plugins
// (`make cluster-deps`).
func findBinaries() (binaries, error) {
	var b binaries
	var err error
	if b.apiserver, b.etcd, err = controlplane.Binaries(); err != nil {
		return b, err
	}
	dir := filepath.Dir(b.apiserver)
	for _, p := range []struct {
		dst  *string
		name string
	}{{&b.controllerManager, "kube-controller-manager"}, {&b.scheduler, "kube-scheduler"}, {&b.proxy, "kube-proxy"}, {&b.kubelet, "kubelet"}} {
		*p.dst = filepath.Join(dir, p.name)
		if _, err := os.Stat(*p.dst); err != nil {
			return b, fmt.Errorf("no %s next to %s: run `make testbin`", p.name, b.apiserver)
		}
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback"} {
		if _, err := os.Stat(p); err != nil {
			return b, fmt.Errorf("no %s: run `make cluster-deps` (Debian packages containerd, runc, containernetworking-plugins, iptables)", p)
		}
	}
	for _, p := range []struct {
		dst  *string
		name string
	}{{&b.containerd, "containerd"}, {&b.ctr, "ctr"}, {new(string), "iptables-save"}, {new(string), "iptables-restore"}, {new(string), "ip"}} {
		if *p.dst, err = exec.LookPath(p.name); err != nil {
			return b, fmt.Errorf("no %s: run `make cluster-deps` (Debian packages containerd, runc, containernetworking-plugins, iptables)", p.name)
		}
	}
	return b, nil
}

// defaultNodeIP is the first global unicast IPv4 address of an interface
// that is up: kubelet refuses a loopback node IP, and pods must reach it.
func defaultNodeIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || i.Name == BridgeName {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("no interface with a global unicast IPv4 address for the node IP: set Options.NodeIP")
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	addr, err := process.FreeAddr()
	if err != nil {
		return 0, err
	}
	_, p, _ := net.SplitHostPort(addr)
	return strconv.Atoi(p)
}

// run starts a component with its output in LogDir/name.log and records
// it in the state file, so a later start can kill it after a crash.
func (c *Cluster) run(name, path string, grace time.Duration, args ...string) (*component, error) {
	log, err := os.OpenFile(filepath.Join(c.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &component{name: name, Process: &process.Process{Path: path, Args: args, Log: log}, grace: grace}
	if err := p.Start(); err != nil {
		log.Close()
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.st.Processes = append(c.st.Processes, stateProcess{Path: path, PID: p.PID()})
	return p, c.st.save()
}

// wait polls check until it succeeds, failing early when p exited.
func (c *Cluster) wait(ctx context.Context, p *component, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := process.Poll(ctx, what, func(ctx context.Context) error {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited (see %s): %w", p.name, filepath.Join(c.LogDir, p.name+".log"), process.ErrExited)
		}
		return check(ctx)
	})
	if err != nil && p != nil {
		err = fmt.Errorf("%w\ntail of %s.log:\n%s", err, p.name, process.Tail(filepath.Join(c.LogDir, p.name+".log"), 15))
	}
	return err
}

func (c *Cluster) start(ctx context.Context, bins binaries, images []string, apiservers int) error {
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	var err error
	if c.ca, err = newCA(); err != nil {
		return err
	}
	caFile := filepath.Join(pki, "ca.crt")
	if err := os.WriteFile(caFile, c.ca.pem, 0o644); err != nil {
		return err
	}

	// etcd, on loopback ports of its own
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := c.run("etcd", bins.etcd, 30*time.Second, flags(
		"data-dir", filepath.Join(c.Dir, "etcd"),
		"listen-client-urls", etcdURL, "advertise-client-urls", etcdURL,
		"listen-peer-urls", peerURL, "initial-advertise-peer-urls", peerURL,
		"initial-cluster", "default="+peerURL,
		"unsafe-no-fsync", "true",
		// as kubeadm runs it (see controlplane): quiet resources' bookmarks carry a current RV
		"watch-progress-notify-interval", "5s",
	)...)
	if err != nil {
		return err
	}

	// kube-apiserver on every address: pods reach it at the node IP
	// (through the kubernetes Service), the host at 127.0.0.1
	if c.APIServerPort, err = freePort(); err != nil {
		return err
	}
	serving, err := c.ca.issue("kube-apiserver", nil, "127.0.0.1", "localhost", KubernetesServiceIP, c.NodeIP,
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return err
	}
	servingCrt, servingKey, err := serving.write(pki, "apiserver")
	if err != nil {
		return err
	}
	kubeletClient, err := c.ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"})
	if err != nil {
		return err
	}
	kcCrt, kcKey, err := kubeletClient.write(pki, "apiserver-kubelet-client")
	if err != nil {
		return err
	}
	saKey, saPub, err := newServiceAccountKey(pki)
	if err != nil {
		return err
	}
	if err := c.wait(ctx, etcd, "etcd healthy", time.Minute, func(ctx context.Context) error {
		return process.GetOK(ctx, etcdURL+"/health")
	}); err != nil {
		return err
	}
	apiserver, err := c.run("kube-apiserver", bins.apiserver, 10*time.Second, flags(
		"etcd-servers", etcdURL,
		"bind-address", "0.0.0.0",
		"secure-port", strconv.Itoa(c.APIServerPort),
		"advertise-address", c.NodeIP,
		// the kubernetes Service's endpoints are the cluster's to set
		// (RouteAPIServers), not the API server's
		"endpoint-reconciler-type", "none",
		"cert-dir", filepath.Join(c.Dir, "apiserver"),
		"tls-cert-file", servingCrt, "tls-private-key-file", servingKey,
		"client-ca-file", caFile,
		"service-account-key-file", saPub,
		"service-account-signing-key-file", saKey,
		"service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"service-cluster-ip-range", serviceCIDR,
		"authorization-mode", "Node,RBAC",
		"enable-admission-plugins", "NodeRestriction",
		"kubelet-client-certificate", kcCrt, "kubelet-client-key", kcKey,
		// the node's name is no DNS name: logs and exec dial its IP
		"kubelet-preferred-address-types", "InternalIP,Hostname",
		"profiling", "false",
	)...)
	if err != nil {
		return err
	}
	c.APIServerPorts, c.apiservers = []int{c.APIServerPort}, []*component{apiserver}

	// kubeconfigs: admin, and one per component with the identity its
	// bootstrap RBAC role binding names
	server := fmt.Sprintf("https://127.0.0.1:%d", c.APIServerPort)
	identities := []struct{ name, cn, group string }{
		{"admin", "rvsync-admin", "system:masters"},
		{"kube-controller-manager", "system:kube-controller-manager", ""},
		{"kube-scheduler", "system:kube-scheduler", ""},
		{"kube-proxy", "system:kube-proxy", ""},
		{"kubelet", "system:node:" + NodeName, "system:nodes"},
	}
	kubeconfigs := map[string]string{}
	for _, id := range identities {
		var groups []string
		if id.group != "" {
			groups = []string{id.group}
		}
		kp, err := c.ca.issue(id.cn, groups)
		if err != nil {
			return err
		}
		crt, key, err := kp.write(pki, id.name)
		if err != nil {
			return err
		}
		kubeconfigs[id.name] = filepath.Join(c.Dir, id.name+".kubeconfig")
		if err := writeConfig(kubeconfigs[id.name], kubeconfig(server, c.ca.pem, crt, key)); err != nil {
			return err
		}
	}
	c.Kubeconfig = kubeconfigs["admin"]
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if err := c.wait(ctx, apiserver, "kube-apiserver ready", 2*time.Minute, func(ctx context.Context) error {
		return c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}); err != nil {
		return err
	}
	for i := 1; i < apiservers; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		// the first's flags, certificates and keys on a port of its own
		args := slices.Clone(apiserver.Args)
		for j, a := range args {
			if strings.HasPrefix(a, "--secure-port=") {
				args[j] = "--secure-port=" + strconv.Itoa(port)
			}
		}
		p, err := c.run("kube-apiserver-"+strconv.Itoa(i), bins.apiserver, 10*time.Second, args...)
		if err != nil {
			return err
		}
		c.APIServerPorts, c.apiservers = append(c.APIServerPorts, port), append(c.apiservers, p)
		if err := c.waitAPIServer(ctx, i); err != nil {
			return err
		}
	}
	if err := c.RouteAPIServers(ctx, c.NodeIP, c.APIServerPorts...); err != nil {
		return err
	}

	kcm, err := c.run("kube-controller-manager", bins.controllerManager, 10*time.Second, flags(
		"kubeconfig", kubeconfigs["kube-controller-manager"],
		"leader-elect", "false",
		// published to every namespace as kube-root-ca.crt, which pods'
		// projected service-account volumes hold as ca.crt
		"root-ca-file", caFile,
		"service-account-private-key-file", saKey,
		"use-service-account-credentials", "true",
		"secure-port", "0",
	)...)
	if err != nil {
		return err
	}
	if _, err := c.run("kube-scheduler", bins.scheduler, 10*time.Second, flags(
		"kubeconfig", kubeconfigs["kube-scheduler"],
		"leader-elect", "false",
		"secure-port", "0",
	)...); err != nil {
		return err
	}

	// containerd with the cluster's images
	cniConf := filepath.Join(c.Dir, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return err
	}
	if err := writeConfig(filepath.Join(cniConf, "10-rvsync.conflist"), cniConfig(filepath.Join(c.Dir, "cni", "ipam"))); err != nil {
		return err
	}
	ctrdDir := filepath.Join(c.Dir, "containerd")
	if err := os.MkdirAll(ctrdDir, 0o755); err != nil {
		return err
	}
	ctrdConf := filepath.Join(ctrdDir, "config.toml")
	if err := os.WriteFile(ctrdConf, []byte(containerdConfig(ctrdDir, c.st.Socket, cniConf)), 0o600); err != nil {
		return err
	}
	containerd, err := c.run("containerd", bins.containerd, 30*time.Second, "--config", ctrdConf)
	if err != nil {
		return err
	}
	if err := c.wait(ctx, containerd, "containerd serving", time.Minute, func(ctx context.Context) error {
		return exec.CommandContext(ctx, bins.ctr, "--address", c.st.Socket, "version").Run()
	}); err != nil {
		return err
	}
	pause, err := BuildImage(ctx, filepath.Join(c.Dir, "images"), PauseProgram, PauseImage)
	if err != nil {
		return err
	}
	for _, img := range append([]string{pause}, images...) {
		if out, err := exec.CommandContext(ctx, bins.ctr, "--address", c.st.Socket, "-n", "k8s.io",
			"images", "import", "--snapshotter", "overlayfs", img).CombinedOutput(); err != nil {
			return fmt.Errorf("import %s into containerd: %v: %s", img, err, out)
		}
	}

	// kube-proxy routes Services, the kubernetes one included
	proxyHealthz, err := process.FreeAddr()
	if err != nil {
		return err
	}
	proxyMetrics, err := process.FreeAddr()
	if err != nil {
		return err
	}
	proxyConf := filepath.Join(c.Dir, "kube-proxy.yaml")
	if err := writeConfig(proxyConf, kubeProxyConfig(kubeconfigs["kube-proxy"], c.NodeIP, proxyHealthz, proxyMetrics)); err != nil {
		return err
	}
	proxy, err := c.run("kube-proxy", bins.proxy, 10*time.Second, "--config", proxyConf)
	if err != nil {
		return err
	}

	// kubelet
	kubeletPort, err := freePort()
	if err != nil {
		return err
	}
	healthzPort, err := freePort()
	if err != nil {
		return err
	}
	kubeletDir := filepath.Join(c.Dir, "kubelet")
	if err := os.MkdirAll(kubeletDir, 0o755); err != nil {
		return err
	}
	kubeletConf := filepath.Join(c.Dir, "kubelet.yaml")
	if err := writeConfig(kubeletConf, kubeletConfig(c.NodeIP, kubeletPort, healthzPort, caFile, c.st.Socket, filepath.Join(c.Dir, "kubelet-files"))); err != nil {
		return err
	}
	kubelet, err := c.run("kubelet", bins.kubelet, 30*time.Second, flags(
		"config", kubeletConf,
		"kubeconfig", kubeconfigs["kubelet"],
		"root-dir", kubeletDir,
		"cert-dir", filepath.Join(c.Dir, "kubelet-pki"),
		"node-ip", c.NodeIP,
		"hostname-override", NodeName,
	)...)
	if err != nil {
		return err
	}
	if err := c.wait(ctx, kubelet, "node "+NodeName+" Ready", 3*time.Minute, func(ctx context.Context) error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready", NodeName)
	}); err != nil {
		return err
	}
	if err := c.wait(ctx, proxy, "kube-proxy healthy", time.Minute, func(ctx context.Context) error {
		return process.GetOK(ctx, "http://"+proxyHealthz+"/healthz")
	}); err != nil {
		return err
	}
	// kube-controller-manager's service-account and root-CA controllers
	// have run: pods can be created and mount their token
	return c.wait(ctx, kcm, "the default ServiceAccount and kube-root-ca.crt", 2*time.Minute, func(ctx context.Context) error {
		if _, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
}

// Endpoint names of the kubernetes Service as the API server's reconciler
// would write them.
const (
	kubernetesService  = "kubernetes"
	endpointsManagedBy = "rvsync-cluster"
)

// RouteAPIServers points the `kubernetes` Service, which in-cluster
// clients dial (KUBERNETES_SERVICE_HOST), at host on each of
// ports, an EndpointSlice per port (one slice has one port number): every
// new connection to the Service goes to one of them, as kube-proxy picks.
func (c *Cluster) RouteAPIServers(ctx context.Context, host string, ports ...int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// the API server creates the Service shortly after it is ready
	if err := process.Poll(ctx, "the kubernetes Service", func(ctx context.Context) error {
		_, err := c.Client.CoreV1().Services("default").Get(ctx, kubernetesService, metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	eps := c.Client.DiscoveryV1().EndpointSlices("default")
	for i, port := range ports {
		if err := routeSlice(ctx, eps, sliceName(i), host, port); err != nil {
			return err
		}
	}
	for i := len(ports); ; i++ { // slices of an earlier, longer route
		err := eps.Delete(ctx, sliceName(i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("endpoints of the kubernetes Service: %w", err)
		}
	}
}

// sliceName names the kubernetes Service's EndpointSlice of its i-th API
// server: the first as the API server's reconciler would.
func sliceName(i int) string {
	if i == 0 {
		return kubernetesService
	}
	return kubernetesService + "-" + strconv.Itoa(i)
}

// routeSlice creates or updates the EndpointSlice name of the kubernetes
// Service with one endpoint, host:port.
func routeSlice(ctx context.Context, eps discoveryv1client.EndpointSliceInterface, name, host string, port int) error {
	p := int32(port)
	portName, proto, ready := "https", corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{
			discoveryv1.LabelServiceName: kubernetesService,
			discoveryv1.LabelManagedBy:   endpointsManagedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p, Protocol: &proto}},
	}
	cur, err := eps.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = eps.Create(ctx, slice, metav1.CreateOptions{})
	case err == nil:
		slice.ResourceVersion = cur.ResourceVersion
		_, err = eps.Update(ctx, slice, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpoints of the kubernetes Service: %w", err)
	}
	return nil
}

// RestartAPIServer stops kube-apiserver i (SIGTERM, SIGKILL after its
// grace period) and starts it again with the same flags, as a rolling
// upgrade does, and waits until it is ready. kube-proxy keeps its
// endpoint: connections made meanwhile to it are refused and retried.
func (c *Cluster) RestartAPIServer(ctx context.Context, i int) error {
	p := c.apiservers[i]
	old := p.PID()
	if err := p.Stop(p.grace); err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	for j := range c.st.Processes {
		if c.st.Processes[j].PID == old {
			c.st.Processes[j].PID = p.PID()
		}
	}
	if err := c.st.save(); err != nil {
		return err
	}
	return c.waitAPIServer(ctx, i)
}

// waitAPIServer waits until kube-apiserver i answers /readyz.
func (c *Cluster) waitAPIServer(ctx context.Context, i int) error {
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", c.APIServerPorts[i])
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return c.wait(ctx, c.apiservers[i], c.apiservers[i].name+" ready", 2*time.Minute, func(ctx context.Context) error {
		return client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// APIServerURL is the API server's URL on loopback.
func (c *Cluster) APIServerURL() *url.URL {
	return &url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.APIServerPort))}
}

// Stop deletes every pod (so kubelet tears down containers and the CNI
// its own way), stops every component, then undoes every change to the
// host. It returns an error naming whatever it could not undo.
func (c *Cluster) Stop() error {
	var errs []error
	stop := func(names ...string) {
		for i := len(c.procs) - 1; i >= 0; i-- {
			p := c.procs[i]
			for _, n := range names {
				if p.name == n {
					if err := p.Stop(p.grace); err != nil {
						errs = append(errs, fmt.Errorf("stop %s: %w", p.name, err))
					}
				}
			}
		}
	}
	// no controller recreates and no scheduler places what is deleted now
	stop("kube-controller-manager", "kube-scheduler")
	if c.Client != nil && c.running("kubelet") {
		if err := c.deletePods(); err != nil {
			errs = append(errs, err)
		}
	}
	stop("kubelet", "kube-proxy", "containerd")
	for i := len(c.apiservers) - 1; i > 0; i-- {
		stop(c.apiservers[i].name)
	}
	stop("kube-apiserver", "etcd")
	if err := c.st.Before.restore(c.st); err != nil {
		errs = append(errs, err)
	}
	now, err := readHost()
	if err != nil {
		errs = append(errs, err)
	} else if left := c.st.Before.diff(now); len(left) > 0 {
		errs = append(errs, fmt.Errorf("the cluster left on the host:\n%s", strings.Join(left, "\n")))
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(stateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := c.lock.Unlock(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Cluster) running(name string) bool {
	for _, p := range c.procs {
		if p.name == name && !p.Exited() {
			return true
		}
	}
	return false
}

// deletePods deletes every pod and waits until kubelet has stopped them
// all (their sandboxes' network torn down by the CNI plugins).
func (c *Cluster) deletePods() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nss, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	for _, ns := range nss.Items {
		if err := c.Client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete pods in %s: %w", ns.Name, err)
		}
	}
	return process.Poll(ctx, "every pod gone", func(ctx context.Context) error {
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("%d pods left, e.g. %s/%s", n, pods.Items[0].Namespace, pods.Items[0].Name)
		}
		return nil
	})
}

// ServingCert issues a serving certificate from the cluster CA for hosts
// (IPs or DNS names): pods trust it, since their ca.crt is that CA. A proxy
// in front of the API server answers with one for KubernetesServiceIP.
func (c *Cluster) ServingCert(hosts ...string) (tls.Certificate, error) {
	kp, err := c.ca.issue("rvsync-cluster-proxy", nil, hosts...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return kp.TLS()
}

// CAPool holds the cluster CA, which signed the API server's certificate.
func (c *Cluster) CAPool() *x509.CertPool { return c.ca.certPool() }
