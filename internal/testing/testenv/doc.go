// Package testenv is the testing layer over the local environment: it
// starts a real control plane (internal/testing/controlplane), an exporter process
// (internal/testing/exporterproc) or a fault proxy for a test and stops it when the
// test ends, and waits on conditions. A test that needs real components
// lives in a file built only with the integration tag (//go:build
// integration: `make test` builds it, `make test-unit` does not); the
// helpers that start them fail a test built without it
// (RequireIntegration). It is the only one of these packages that imports
// testing; commands (the demo, the benchmark, the cluster) import the
// launcher packages directly. For the tests it also names the launchers'
// types and functions (Options, Metrics, Churn, ...), so that a test needs
// one import.
package testenv
