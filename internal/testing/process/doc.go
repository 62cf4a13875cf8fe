// Package process runs the programs of the local environments (etcd,
// kube-apiserver, the exporter, Prometheus, kubelet, ...) as processes: it
// finds their binaries in the tool cache (ToolDir), starts, signals and
// stops them, polls them until they are ready, and reads their output. It
// does not import testing, so commands (the demo, the benchmark, the
// cluster) use it as the tests do.
package process
