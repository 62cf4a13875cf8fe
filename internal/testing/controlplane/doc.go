// Package controlplane starts a real Kubernetes control plane on loopback
// for tests, the demo and the benchmark: etcd (one member or a cluster) and
// kube-apiserver built from source into the tool cache by `make testbin`, run by
// controller-runtime's envtest, with the controls the fault tests need
// (restart, snapshot and restore of etcd, leader changes), an etcd of their
// own for chosen resources (kube-apiserver's --etcd-servers-overrides, as
// large clusters keep events) and a TCP fault proxy in front of the API
// server. It does not import testing; the test helpers over it are in
// internal/testing/testenv.
package controlplane
