// Package catalog declares, once, every metric family the rvsync exporter
// exports: its name, help text, type, label names and histogram buckets, plus
// the label values the exporter emits and the names of the SLO recording rules
// built on top of them.
//
// Everything that names a metric — the collectors in exporter/collector, the
// rule generator in alerts/, the dashboard builders in dashboards/, the README
// table — reads it from here, never from a string literal, so a rename is one
// edit and a test can prove that no dashboard or rule refers to a series the
// exporter does not produce.
//
// The package is a leaf: it imports nothing from this module.
package catalog
