// Command exporter runs the rvsync exporter: instrumented informers and head
// probes for a set of resources, served as Prometheus metrics. See package
// exporter and `exporter --help`.
package main

import (
	"os"

	"github.com/rvsync-slo/rvsync-slo/exporter"
)

// Set by the linker (see Makefile).
var (
	version  = "dev"
	revision = "unknown"
)

func main() {
	os.Exit(exporter.Main(os.Args[1:], os.Stdout, os.Stderr, exporter.BuildInfo{Version: version, Revision: revision}))
}
