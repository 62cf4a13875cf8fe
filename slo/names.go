package slo

// LabelSLO carries the SLO name on every SLO recording rule and alert.
const LabelSLO = "slo"

// SLO names: the values of LabelSLO.
const (
	ListLatency    = "list-latency"    // List latency <= threshold for the objective's share of Lists
	CanaryDelivery = "canary-delivery" // canary delivered within threshold for the objective's share of writes
	CacheStaleness = "cache-staleness" // time-slice: windows where min staleness <= threshold
	RVLag          = "rv-lag"          // time-slice: windows where min RV lag <= threshold
	StaleReads     = "stale-reads"     // checked cache reads of sampled reconciles that were not stale
)

// Names lists the SLO names in a stable order.
func Names() []string {
	return []string{ListLatency, CanaryDelivery, CacheStaleness, RVLag, StaleReads}
}

// Thresholds of the default SLOs (the seeds' values). The catalog's bucket
// layouts contain the event-ratio ones exactly, so that `le` selects count
// good events without interpolation (a test checks).
const (
	DefaultListLatencyThresholdSeconds   = 1.5
	DefaultCanaryLatencyThresholdSeconds = 30
	DefaultStalenessThresholdSeconds     = 30
	DefaultRVLagThresholdRevisions       = 500
)

// DefaultStaleReadsObjective: at most 1 % of checked cache reads stale. The
// seeds measured 0.17 % at 60 reconciles/s and 2.83 % at 120/s, where the
// informer fell behind its writes.
const DefaultStaleReadsObjective = 0.99

// DefaultQueueDepthLimit is the default backpressure limit: deltas waiting
// between an informer's watch and its store (the seeds' DeltaFIFO limit,
// QueueLength <= 1000).
const DefaultQueueDepthLimit = 1000

// Recording-rule names, `level:metric:operation` as in kubernetes-mixin and
// sloth. Each carries the labels `slo`, `resource` and the configured cluster
// label.
const (
	// RuleErrorRatioPrefix + window is the error ratio (bad/total) of an
	// SLO over that window, e.g. rvsync_slo:sli_error:ratio_rate5m; see
	// ErrorRatioRule.
	RuleErrorRatioPrefix = "rvsync_slo:sli_error:ratio_rate"
	// RuleBadSlice is a time-slice SLO's indicator at each evaluation: 1
	// when the signal's minimum over the slice window (longer than the
	// bookmark period) exceeds the threshold, else 0. Its error ratios are
	// averages of it over each window.
	RuleBadSlice = "rvsync_slo:sli_error:bad_slice"
	// RuleObjective is the SLO objective as a ratio (e.g. 0.99), one series per SLO and resource.
	RuleObjective = "rvsync_slo:objective:ratio"
	// RuleErrorBudgetRemaining is 1 - (error ratio over the budget period / (1 - objective)).
	RuleErrorBudgetRemaining = "rvsync_slo:error_budget_remaining:ratio"
	// RuleErrorRatioSampled is the shortest window's error ratio sampled
	// every BudgetInterval, in the budget group: the budget-period ratio
	// averages it, reading a fifth of the samples the 30-second record
	// holds.
	RuleErrorRatioSampled = "rvsync_slo:sli_error_sampled:ratio_rate"
	// RuleQuantilePrefix + window is a latency SLO's objective percentile
	// over that window (the shortest recorded), by the SLI's Breakdown too,
	// with the percentile in LabelQuantile; see QuantileRule.
	RuleQuantilePrefix = "rvsync_slo:sli_latency_seconds:quantile_rate"
)

// LabelQuantile carries the quantile a RuleQuantilePrefix rule records
// (the SLO's objective), as in kubernetes-mixin's quantile rules.
const LabelQuantile = "quantile"

// BudgetInterval is the evaluation interval of the budget group (the
// budget-period ratio, the objective and the remaining budget, which only
// dashboards read): half of Prometheus' default lookback (5m), so an
// instant query always finds a sample, as pyrra's long-window group does.
// Its input is sampled at this interval too, so the 30-day average reads
// 17,280 samples per series every 2m30s instead of 86,400 every 30 s: a
// twenty-fifth of the work. Each instant of the period still counts equally
// (every instant lies in two of the sampled 5-minute windows). Scaled
// windows (Spec.ScaledWindows) scale it too.
const BudgetInterval = "2m30s"

// QuantileRule returns the recording-rule name of a latency SLO's
// objective percentile over window.
func QuantileRule(window string) string { return RuleQuantilePrefix + window }

// ErrorRatioRule returns the recording-rule name of an SLO's error ratio
// over window (a Prometheus duration such as 5m or 30d).
func ErrorRatioRule(window string) string { return RuleErrorRatioPrefix + window }

// RecordingRules returns every recording-rule name the rules of s record,
// for tests that check that expressions refer only to what exists.
func (s Spec) RecordingRules() []string {
	s = s.WithDefaults()
	shortest := s.RecordedWindows()[0]
	names := []string{RuleBadSlice, RuleObjective, RuleErrorBudgetRemaining, ErrorRatioRule(s.BudgetPeriod), RuleErrorRatioSampled + shortest, QuantileRule(shortest)}
	for _, w := range s.RecordedWindows() {
		names = append(names, ErrorRatioRule(w))
	}
	return append(names, StageRules()...)
}
