// Package slo is the one model of rvsync-slo's service-level objectives:
// the Spec (selectors, cluster label, objectives, thresholds, the burn-rate
// window table, symptom thresholds), its defaults and validation, the SLI of
// each SLO (which catalog family, good and total, event ratio or time
// slice), the recording-rule names derived from the windows, and the PromQL
// that both generators share.
//
// Package alerts turns a Spec into rule groups and package dashboards into
// Grafana dashboards; neither imports the other, so a dashboard's red line
// and an alert's threshold come from the same value.
//
// # SLIs
//
// Event-ratio SLIs (List latency, canary delivery) are 1 - good/total from
// rates of the raw counters: good events are histogram observations with
// le equal to the threshold, which must therefore be a bucket bound. A
// window without events records no sample (not NaN), so averages skip it.
//
// Time-slice SLIs (cache staleness, RV lag) record one indicator per
// resource, RuleBadSlice: 1 when the minimum of the signal over
// Spec.SliceWindow (default 2m, longer than the ~60 s watch bookmark period)
// is above the threshold. Their window ratios average that indicator, so
// even the 3d window reads one cheap series.
//
// # Stages
//
// Spec.StageRecords breaks each resource's delay into the stages of its
// delivery (Stages: etcd_to_cache, cache_to_client, client) by joining the
// API servers' own metrics (Spec.APIServerJob) with the exporter's, in
// seconds, and records the worst: the stage every alert about the resource
// names. The API servers label a resource by group and resource
// (apps, deployments); the rules relabel it as the exporter does
// (deployments.apps). Without the API servers' series nothing is named.
package slo
