// Package exporter is the rvsync exporter command: its one export, Main,
// parses flags and the YAML config file (exit code 2 and one line for bad
// input), resolves the configured `plural.group` names through discovery,
// runs one metadata-only informer per resource through pkg/probe with a head
// probe per RV space and a canary, and serves /metrics, /healthz and /readyz.
//
// It is not a library: operators who want the signals in their own process
// embed pkg/probe. Its configuration format is package config; its other
// parts are internal: resolve (discovery) and server (HTTP, secure metrics).
package exporter
