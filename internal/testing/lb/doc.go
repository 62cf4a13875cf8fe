// Package lb is a TCP load balancer for tests: the layer-4 balancer that
// stands in front of every HA control plane (a cloud network load balancer,
// kubeadm's haproxy, the kubernetes Service's endpoints under kube-proxy).
//
// Each accepted connection goes to the next backend in round-robin order
// and stays pinned to it until either side closes it; the balancer never
// looks inside (TLS runs through it unchanged). Like a cloud balancer's
// health check, it skips a backend it cannot dial. Tests control it per
// backend: Freeze holds every byte of the backend's connections, present
// and future, while keeping them open (a hung API server); Drain takes the
// backend out of rotation while its open connections carry on (the
// deregistration before a rolling restart); Reset closes its connections.
package lb
