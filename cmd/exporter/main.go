// Command exporter runs the rvsync exporter: instrumented informers and head
// probes for a set of resources, served as Prometheus metrics. See package
// exporter and `exporter --help`.
package main

import (
	"os"
	"runtime"

	"github.com/rvsync-slo/rvsync-slo/exporter"
)

// Set by the linker (see Makefile).
var (
	version  = "dev"
	revision = "unknown"
)

func main() {
	// One processor unless GOMAXPROCS is set. The exporter's work per watch
	// event is a few microseconds, handed between three goroutines (the
	// connection's, the decoder's, the reflector's); on one processor they
	// hand over without waking other threads, which costs more than the
	// work (docs/benchmarks.md, "CPU per event").
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	os.Exit(exporter.Main(os.Args[1:], os.Stdout, os.Stderr, exporter.BuildInfo{Version: version, Revision: revision}))
}
