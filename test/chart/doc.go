// Package chart holds the chart's suite: the rvsync-slo Helm chart rendered,
// linted, installed and uninstalled with the real helm binary (through the
// rig internal/testing/chart) on a real API server, its schema, values,
// rules, dashboards and documented commands checked against what the Go
// generators and the exporter say. Every test here needs real components and
// is built only with the integration tag.
package chart
