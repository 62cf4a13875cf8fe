// Package cluster starts a real single-node Kubernetes cluster on this
// machine for tests and `make cluster`: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kube-proxy built from source
// into the tool cache (`make testbin`), containerd and runc from Debian with a CNI
// bridge whose pod IPs the host reaches, and kubelet. Images come from
// tarballs imported into containerd (BuildImage), never from a registry.
//
// The node runs as root on the host, so a cluster changes the host: kubelet
// and containerd write fixed paths, mount, make cgroups, add iptables
// chains and set kernel settings; the CNI plugin makes a bridge. Start
// records the host's state first, and Stop deletes every pod, stops every
// component and undoes each change, then compares the host with the record
// and reports what differs. A lock file keeps to one cluster per machine
// (fixed paths, cgroup and chain names); a state file lets the next Start
// undo a cluster whose process died.
//
// Component logs go to Options.LogDir. The kubernetes Service's endpoints
// are set by the cluster, not by kube-apiserver (RouteAPIServers), so a test
// can put a proxy between the pods and the API server.
package cluster
