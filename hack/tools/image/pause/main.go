// Command pause is the sandbox ("pause") container of the test cluster's
// pods: it holds the pod's namespaces open and does nothing else. It exits
// on SIGTERM or SIGINT, the way the runtime stops a sandbox, and reaps
// nothing: the test cluster's pods do not share a process namespace.
//
// It exists because the usual pause image comes from a registry this
// machine cannot reach; `image` packs it like the exporter.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
