// Package catalog declares, once, the metric contract of rvsync-slo: every
// metric family's name, help text, type, label names and histogram buckets,
// and the label values the probe emits.
//
// Everything that names a metric — the collectors of pkg/probe, the SLO model
// of package slo, the rule generator in alerts/, the dashboard builders in
// dashboards/, the metric table of docs/metrics.md — reads it from here, never from a string
// literal, so a rename is one edit and a test can prove that no dashboard or
// rule refers to a series the probe does not produce.
//
// The package is the ground floor: it imports nothing from this module, and
// everything else may import it.
package catalog
