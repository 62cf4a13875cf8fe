package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Addresses of the cluster's networks. Pods get addresses from podCIDR on
// the bridge; Services from serviceCIDR, the first of which is the API
// server's `kubernetes` Service, the address in-cluster clients dial.
const (
	podCIDR     = "10.88.0.0/16"
	serviceCIDR = "10.96.0.0/12"
	// KubernetesServiceIP is the ClusterIP of default/kubernetes.
	KubernetesServiceIP = "10.96.0.1"
	// BridgeName is the CNI bridge the pods hang off (its gateway is the
	// host's address in the pod network).
	BridgeName = "rvsync0"
	// NodeName is the one node's name.
	NodeName = "rvsync-node"
	// PauseImage is the sandbox image containerd runs for every pod.
	PauseImage = "rvsync.local/pause:1"
)

// writeConfig writes v as YAML (JSON for a .json/.conflist file).
func writeConfig(path string, v any) error {
	var b []byte
	var err error
	if ext := filepath.Ext(path); ext == ".json" || ext == ".conflist" {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// kubeconfig is a kubeconfig file for a client certificate.
func kubeconfig(server string, caPEM []byte, certFile, keyFile string) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{"name": "rvsync", "cluster": map[string]any{
			"server": server, "certificate-authority-data": caPEM,
		}}},
		"users": []any{map[string]any{"name": "user", "user": map[string]any{
			"client-certificate": certFile, "client-key": keyFile,
		}}},
		"contexts":        []any{map[string]any{"name": "rvsync", "context": map[string]any{"cluster": "rvsync", "user": "user"}}},
		"current-context": "rvsync",
	}
}

// containerdConfig is containerd's config (version 2) for the CRI: its own
// root, state and socket; the CRI plugin with the imported pause image,
// runc from Debian without systemd cgroups, the CNI config of the cluster.
// restrict_oom_score_adj: root on these machines lacks CAP_SYS_RESOURCE,
// so the pause container's oom_score_adj of -998 fails every sandbox with
// "can't get final child's PID from pipe: EOF" unless it is capped at the
// runtime's own score.
func containerdConfig(dir, socket, cniConfDir string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc",
		filepath.Join(dir, "opt"), PauseImage, cniConfDir)
}

// cniConfig is the pod network: a bridge whose gateway address is the
// host's, so the host reaches every pod IP and pods reach the host (and
// through kube-proxy's rules the API server). No masquerading: pods talk
// to this host only.
func cniConfig(ipamDir string) map[string]any {
	return map[string]any{
		"cniVersion": "0.4.0",
		"name":       "rvsync",
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      BridgeName,
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  []any{[]any{map[string]any{"subnet": podCIDR}}},
				"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
				"dataDir": ipamDir,
			},
		}},
	}
}

// kubeletConfig is kubelet's configuration for this machine: cgroup v1
// with the cgroupfs driver, no swap check, no eviction or node-allocatable
// enforcement and no image GC (a test node's disk and memory are not the
// point), and every directory it would put under /var its own.
func kubeletConfig(nodeIP string, port, healthzPort int, caFile, socket, dir string) map[string]any {
	return map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            nodeIP,
		"port":               port,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        healthzPort,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": caFile},
		},
		"authorization":                 map[string]any{"mode": "Webhook"},
		"containerRuntimeEndpoint":      "unix://" + socket,
		"cgroupDriver":                  "cgroupfs",
		"failCgroupV1":                  false,
		"failSwapOn":                    false,
		"enforceNodeAllocatable":        []string{},
		"evictionHard":                  map[string]string{},
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"localStorageCapacityIsolation": false,
		"volumePluginDir":               filepath.Join(dir, "volume-plugins"),
		"podLogsDir":                    filepath.Join(dir, "pod-logs"),
		"serializeImagePulls":           false,
		"resolvConf":                    "/etc/resolv.conf",
	}
}

// kubeProxyConfig runs kube-proxy in iptables mode for the pod network,
// told to leave the host's kernel settings alone: no conntrack table
// resizing or timeouts, no localhost NodePorts (which set route_localnet),
// NodePorts on the node IP only.
func kubeProxyConfig(kubeconfigFile, nodeIP, healthz, metrics string) map[string]any {
	return map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": kubeconfigFile},
		"mode":               "iptables",
		"clusterCIDR":        podCIDR,
		"hostnameOverride":   NodeName,
		"healthzBindAddress": healthz,
		"metricsBindAddress": metrics,
		"nodePortAddresses":  []string{nodeIP + "/32"},
		"iptables":           map[string]any{"localhostNodePorts": false},
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0,
			"tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
			"udpTimeout": "0s", "udpStreamTimeout": "0s",
		},
	}
}

// flags renders --k=v flags in a stable order.
func flags(kv ...string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, "--"+kv[i]+"="+kv[i+1])
	}
	return out
}
