package main

import "github.com/rvsync-slo/rvsync-slo/exporter/collector"

func collectorBuild() collector.BuildInfo {
	return collector.BuildInfo{Version: "demo", Revision: "local"}
}
