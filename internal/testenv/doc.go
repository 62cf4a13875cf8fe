// Package testenv is the testing layer over the local environment: it
// starts a real control plane (internal/controlplane), an exporter process
// (internal/exporterproc) or a fault proxy for a test and stops it when the
// test ends, skips what needs real components under -short, and waits on
// conditions. It is the only one of these packages that imports testing;
// commands (the demo, the benchmark, the cluster) import the launcher
// packages directly. For the tests it also names the launchers' types and
// functions (Options, Metrics, Churn, ...), so that a test needs one import.
package testenv
