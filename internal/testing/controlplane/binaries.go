package controlplane

import (
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// Environment variables that name the control-plane binaries; the Makefile
// sets them to the versions it builds. Without them, the newest build in
// the tool cache is used (process.ToolDir).
const (
	EnvKubeAPIServer = "RVSYNC_KUBE_APISERVER"
	EnvEtcd          = "RVSYNC_ETCD"
)

// Binaries returns the paths of kube-apiserver and etcd.
func Binaries() (apiserver, etcd string, err error) {
	apiserver, err = process.Binary(EnvKubeAPIServer, "k8s-*/kube-apiserver")
	if err != nil {
		return "", "", err
	}
	etcd, err = process.Binary(EnvEtcd, "etcd-*/etcd")
	return apiserver, etcd, err
}
