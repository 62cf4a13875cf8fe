package alerts

import (
	"fmt"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
)

// SLIKind says how an SLO's error ratio is computed.
type SLIKind string

const (
	// EventRatio SLIs count bad events over all events from a histogram:
	// 1 - (count of events <= threshold) / (count of events).
	EventRatio SLIKind = "event-ratio"
	// TimeSlice SLIs count bad time slices: a slice is bad when the
	// signal's minimum over a window longer than the bookmark period exceeds
	// the threshold, so a quiet resource's bookmark sawtooth never burns budget.
	TimeSlice SLIKind = "time-slice"
)

// SLO is one service-level objective, evaluated per resource.
type SLO struct {
	Name      string  `json:"name"`      // one of catalog.SLOs()
	Objective float64 `json:"objective"` // e.g. 0.99; the error budget is 1 - Objective
	Threshold float64 `json:"threshold"` // seconds or revisions, in the unit of the SLI's metric
	Kind      SLIKind `json:"kind"`
	Disabled  bool    `json:"disabled,omitempty"`
}

// BurnWindow is one row of the multi-window multi-burn-rate table: alert when
// the error ratio over both Long and Short exceeds Factor × the budget rate.
type BurnWindow struct {
	Long     string  `json:"long"`     // Prometheus duration, e.g. 1h
	Short    string  `json:"short"`    // e.g. 5m
	Factor   float64 `json:"factor"`   // burn-rate factor, e.g. 14.4
	Severity string  `json:"severity"` // page or ticket
}

// Spec is everything the rule and dashboard generators need to know.
type Spec struct {
	// Selector holds PromQL label matchers (without braces) that select the
	// exporter's series, e.g. `job="rvsync-slo"`. Empty selects every
	// rvsync series, which also covers operators embedding pkg/probe.
	Selector string `json:"selector"`
	// ClusterLabel is the label that tells clusters apart in a multi-cluster
	// store; every aggregation keeps it.
	ClusterLabel string `json:"clusterLabel"`
	// RunbookURLPrefix + lower-cased alert name is each alert's runbook_url.
	RunbookURLPrefix string `json:"runbookURLPrefix"`
	// ExtraLabels are added to every alert (e.g. team routing).
	ExtraLabels map[string]string `json:"extraLabels,omitempty"`
	// BudgetPeriod is the error-budget period, e.g. 30d.
	BudgetPeriod string `json:"budgetPeriod"`
	// Windows is the burn-rate window table.
	Windows []BurnWindow `json:"windows"`
	// SLOs are the objectives, by name.
	SLOs []SLO `json:"slos"`
}

// DefaultRunbookURLPrefix points at docs/runbooks.md in the repository.
const DefaultRunbookURLPrefix = "https://github.com/rvsync-slo/rvsync-slo/blob/main/docs/runbooks.md#"

// DefaultSpec returns the SLOs and windows of the design: List latency
// <= 1.5 s for 95 % of Lists, canary delivery <= 30 s for 99 %, cache
// staleness <= 30 s and RV lag <= 500 revisions as time slices, with the
// four-window table of the SRE workbook over a 30-day budget.
func DefaultSpec() Spec {
	return Spec{
		ClusterLabel:     "cluster",
		RunbookURLPrefix: DefaultRunbookURLPrefix,
		BudgetPeriod:     "30d",
		Windows: []BurnWindow{
			{Long: "1h", Short: "5m", Factor: 14.4, Severity: "page"},
			{Long: "6h", Short: "30m", Factor: 6, Severity: "page"},
			{Long: "1d", Short: "2h", Factor: 3, Severity: "ticket"},
			{Long: "3d", Short: "6h", Factor: 1, Severity: "ticket"},
		},
		SLOs: []SLO{
			{Name: catalog.SLOListLatency, Objective: 0.95, Threshold: catalog.DefaultListLatencyThresholdSeconds, Kind: EventRatio},
			{Name: catalog.SLOCanaryDelivery, Objective: 0.99, Threshold: catalog.DefaultCanaryLatencyThresholdSeconds, Kind: EventRatio},
			{Name: catalog.SLOCacheStaleness, Objective: 0.99, Threshold: catalog.DefaultStalenessThresholdSeconds, Kind: TimeSlice},
			{Name: catalog.SLORVLag, Objective: 0.99, Threshold: catalog.DefaultRVLagThresholdRevisions, Kind: TimeSlice},
		},
	}
}

// SLO returns the named SLO.
func (s Spec) SLO(name string) (SLO, error) {
	for _, o := range s.SLOs {
		if o.Name == name {
			return o, nil
		}
	}
	return SLO{}, fmt.Errorf("no SLO named %q", name)
}
