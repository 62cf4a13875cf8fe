// Package exporter is the rvsync exporter as a library: its configuration
// (flags and YAML file, validated with one-line errors), the resolution of
// `plural.group` resource names through discovery, and the wiring that runs
// one instrumented informer per resource plus the head probes of pkg/probe
// behind an HTTP server with /metrics, /healthz and /readyz.
//
// cmd/exporter only parses flags and calls Run.
package exporter
