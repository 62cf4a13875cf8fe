package catalog

// LabelSLO carries the SLO name on every SLO recording rule and alert.
const LabelSLO = "slo"

// SLO names: the values of LabelSLO.
const (
	SLOListLatency    = "list-latency"    // List latency <= threshold for the objective's share of Lists
	SLOCanaryDelivery = "canary-delivery" // canary delivered within threshold for the objective's share of writes
	SLOCacheStaleness = "cache-staleness" // time-slice: windows where min staleness <= threshold
	SLORVLag          = "rv-lag"          // time-slice: windows where min RV lag <= threshold
)

// SLOs lists the SLO names in a stable order.
func SLOs() []string {
	return []string{SLOListLatency, SLOCanaryDelivery, SLOCacheStaleness, SLORVLag}
}

// Recording-rule names, `level:metric:operation` as in kubernetes-mixin and
// sloth. Each carries the labels `slo`, `resource` and the configured cluster
// label.
const (
	// RuleSLIErrorRatioPrefix + window (SLOWindows) is the error ratio
	// (bad/total) of an SLO over that window, e.g. rvsync_slo:sli_error:ratio_rate5m.
	RuleSLIErrorRatioPrefix = "rvsync_slo:sli_error:ratio_rate"
	// RuleSLIBadSlice is a time-slice SLO's indicator at each evaluation: 1
	// when the signal's minimum over the slice window (longer than the
	// bookmark period) exceeds the threshold, else 0. Its error ratios are
	// averages of it over each window.
	RuleSLIBadSlice = "rvsync_slo:sli_error:bad_slice"
	// RuleObjective is the SLO objective as a ratio (e.g. 0.99), one series per SLO and resource.
	RuleObjective = "rvsync_slo:objective:ratio"
	// RuleErrorBudgetRemaining is 1 - (error ratio over the budget period / (1 - objective)).
	RuleErrorBudgetRemaining = "rvsync_slo:error_budget_remaining:ratio"
)

// SLOWindows are the windows for which error-ratio rules are recorded: those
// of the four burn-rate alerts plus the 30-day budget period.
var SLOWindows = []string{"5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d"}

// SLIErrorRatio returns the recording-rule name of an SLO's error ratio over window.
func SLIErrorRatio(window string) string { return RuleSLIErrorRatioPrefix + window }

// RecordingRules returns every recording-rule name the rule generator may
// produce, for tests that check generated expressions.
func RecordingRules() []string {
	names := []string{RuleSLIBadSlice, RuleObjective, RuleErrorBudgetRemaining}
	for _, w := range SLOWindows {
		names = append(names, SLIErrorRatio(w))
	}
	return names
}
