// Package controlplane starts a real Kubernetes control plane on loopback
// for tests, the demo and the benchmark: etcd (one member or a cluster) and
// kube-apiserver built from source into the tool cache by `make testbin`, run by
// controller-runtime's envtest, with the controls the fault tests need
// (restart, snapshot and restore of etcd, leader changes), an etcd of their
// own for chosen resources (kube-apiserver's --etcd-servers-overrides, as
// large clusters keep events) and a TCP fault proxy in front of the API
// server. It does not import testing; the test helpers over it are in
// internal/testing/testenv.
//
// An HA control plane (Options.APIServers above 1) runs several
// kube-apiservers behind a load balancer (HA). With Options.EtcdProxies
// each of them, envtest's server 0 included, reaches etcd through TCP
// fault proxies of its own, one per etcd member: APIServer.StallEtcd cuts
// one server off etcd while the others go on, so that its watch caches
// stop following etcd (the stage "etcd → that server's watch cache" of a
// delay), and APIServer.WatchCacheRV reads how far its cache of a
// resource got, from the server's own /metrics. What the real server does
// meanwhile (it goes on serving watches and RV-0 lists from the stuck
// cache, its consistent lists fail at the request timeout, it catches up
// within a second of the release) is measured by TestHAServerLosesEtcd
// and written down in docs/testing.md.
package controlplane
