// Package alerts turns an SLO Spec into typed Prometheus rule groups:
// per-resource error-ratio recording rules for every burn-rate window,
// multi-window multi-burn-rate alerts, error-budget rules for the dashboards,
// and symptom alerts. Metric and rule names come from exporter/catalog.
//
// Generate returns rulefmt.RuleGroups; Render marshals them to the rule
// file that `make generate` writes into the chart. Spec.Validate reports
// every problem of a spec at once; zero fields take DefaultSpec's values.
//
// # SLIs
//
// Event-ratio SLIs (List latency, canary delivery) are 1 - good/total from
// rates of the raw counters: good events are histogram observations with
// le equal to the threshold, which must therefore be a bucket bound. A
// window without events records no sample (not NaN), so averages skip it.
//
// Time-slice SLIs (cache staleness, RV lag) record one indicator per
// resource, catalog.RuleSLIBadSlice: 1 when the minimum of the signal over
// Spec.SliceWindow (default 2m, longer than the ~60 s watch bookmark period)
// is above the threshold. A quiet resource's staleness saws from 0 to 60 s
// between bookmarks; its minimum over 2m is ~0, so it never burns budget,
// while a stalled watch does within minutes. Their window ratios average
// that indicator, so even the 3d window reads one cheap series.
//
// # Cost
//
// No rule reads the budget period (30d) of raw samples: the budget-period
// ratio averages the shortest window's record (sloth-style; for event ratios
// it weighs each short window equally rather than each event).
//
// # Labels
//
// Every aggregation is `by (<Spec.ClusterLabel>, resource, ...)`, so the
// rules work in multi-cluster stores; Spec.Selector reaches every raw
// series through one helper. Each alert carries severity (page or ticket),
// slo and resource where they apply, and Spec.ExtraLabels, and annotations
// summary, description and runbook_url (Spec.RunbookURLPrefix plus the
// lower-cased alert name, an anchor of docs/runbooks.md).
//
// The burn-rate table (Spec.Windows) is data: each row becomes one alert
// per SLO, told apart by the long_window and short_window labels.
// Spec.ScaledWindows shrinks the windows for end-to-end tests while keeping
// the rule names.
package alerts
