// Package alerts turns an SLO spec (package slo) into typed Prometheus rule
// groups: per-resource error-ratio recording rules for every burn-rate
// window, multi-window multi-burn-rate alerts, error-budget rules for the
// dashboards, and symptom alerts. Metric names come from pkg/catalog, the
// SLIs and recording-rule names from package slo.
//
// Generate returns rulefmt.RuleGroups; Render marshals them to a rule file;
// RenderHelmTemplate writes the same rules as the Helm template the chart
// renders, so chart values and the Go spec give identical rules.
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
// series through one helper. Each alert carries severity, slo and resource
// where they apply, and Spec.ExtraLabels, and annotations summary,
// description and runbook_url (Spec.RunbookURLPrefix plus the lower-cased
// alert name, an anchor of docs/runbooks.md).
//
// Every alert about a resource ends its description with where the delay
// is: a template query of the worst stage (slo.RuleWorstStage, recorded
// by the stage group from slo.Spec.StageRecords) at firing time, naming
// the API server whose watch cache trails etcd, the stretch between cache
// and client, or the client itself. Without the API servers' series the
// query finds nothing and the description is as before.
//
// The burn-rate table (Spec.Windows) is data: each row becomes one alert
// per SLO, told apart by the long_window and short_window labels.
// Spec.ScaledWindows shrinks the windows for end-to-end tests while keeping
// the rule names.
package alerts
