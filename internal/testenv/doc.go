// Package testenv starts a real control plane for tests and the demo: etcd
// and kube-apiserver built from source into bin/ by `make testbin`, run by
// controller-runtime's envtest, plus a TCP fault proxy in front of the API
// server and a workload that writes objects at a known rate.
package testenv
