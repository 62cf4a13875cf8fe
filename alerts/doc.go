// Package alerts turns an SLO Spec into typed Prometheus rule groups:
// per-resource error-ratio recording rules for every burn-rate window,
// multi-window multi-burn-rate alerts, error-budget rules for the dashboards,
// and symptom alerts. Metric and rule names come from exporter/catalog.
package alerts
