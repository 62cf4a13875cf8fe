package slo

import (
	"fmt"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// SLI says where an SLO's indicator comes from. There is one per name in
// Names(); a Spec only chooses objectives and thresholds.
type SLI struct {
	Kind  Kind
	Title string // human name, e.g. "List latency"
	Alert string // stem of the burn-rate alert name, e.g. ListLatency
	Bad   string // what a bad event or slice is, with a %s for the threshold

	// Event ratio: good events are observations of the histogram Good with
	// le <= threshold and GoodMatchers; all events are Total with
	// TotalMatchers.
	Good          catalog.Metric
	GoodMatchers  []string
	Total         string
	TotalMatchers []string

	// Time slice: a slice is bad when the minimum of Signal over the slice
	// window is above the threshold.
	Signal catalog.Metric
}

// ListKinds matches the Lists the List-latency SLI counts: the informers'
// List pages and the head probes. Watch-list syncs are left out: their
// duration grows with the collection, not with API-server slowness.
var ListKinds = promql.Re(catalog.LabelKind, catalog.KindList, catalog.KindProbe)

var slis = map[string]SLI{
	ListLatency: {
		Kind: EventRatio, Alert: "ListLatency", Title: "List latency",
		Bad:           "Lists (informer pages and head probes) slower than %ss or failed",
		Good:          catalog.ListDuration,
		GoodMatchers:  []string{ListKinds, promql.Eq(catalog.LabelResult, catalog.ResultSuccess)},
		Total:         catalog.ListDuration.Name + "_count",
		TotalMatchers: []string{ListKinds},
	},
	CanaryDelivery: {
		Kind: EventRatio, Alert: "CanaryDelivery", Title: "Canary delivery",
		Bad:           "canary writes not delivered by the informer within %ss",
		Good:          catalog.CanaryDeliveryLatency,
		Total:         catalog.CanaryWrites.Name,
		TotalMatchers: []string{promql.Eq(catalog.LabelResult, catalog.ResultSuccess)},
	},
	CacheStaleness: {
		Kind: TimeSlice, Alert: "CacheStaleness", Title: "Cache staleness",
		Bad:    "time with cache staleness above %ss",
		Signal: catalog.CacheStaleness,
	},
	RVLag: {
		Kind: TimeSlice, Alert: "ResourceVersionLag", Title: "Resource-version lag",
		Bad:    "time with the informer more than %s revisions behind head",
		Signal: catalog.ResourceVersionLag,
	},
}

// SLIOf returns the SLI of the SLO named name.
func SLIOf(name string) (SLI, bool) {
	d, ok := slis[name]
	return d, ok
}

// ErrorRatio is the expression of o's error ratio over rng (a PromQL range),
// computed from raw series. Event ratios are 1 - good/total, with no sample
// (rather than NaN) when there were no events, so averages over time skip
// idle windows; a missing good series counts as zero good events. Time
// slices average the recorded bad-slice indicator.
func (s Spec) ErrorRatio(o SLO, rng string) string {
	d := slis[o.Name]
	if d.Kind == TimeSlice {
		return fmt.Sprintf("avg_over_time(%s[%s])", Rule(RuleBadSlice, o.Name), rng)
	}
	good := s.sumRate(d.Good.Name+"_bucket", rng, append(d.GoodMatchers, promql.Le(o.Threshold))...)
	total := s.sumRate(d.Total, rng, d.TotalMatchers...)
	return fmt.Sprintf("clamp_min(1 - ((%s) or (0 * %s)) / (%s > 0), 0)", good, total, total)
}

// BadSlice is the expression of a time-slice SLO's bad-slice indicator: 1
// when the signal stayed above the threshold for the whole slice window, 0
// otherwise. The minimum over a window longer than the bookmark period is
// taken right after a bookmark, so a quiet resource's sawtooth reads ~0.
func (s Spec) BadSlice(o SLO) string {
	d := slis[o.Name]
	return fmt.Sprintf("max %s (min_over_time(%s[%s])) > bool %s",
		s.By(), s.Series(d.Signal.Name), s.SliceWindow, promql.Num(o.Threshold))
}

// sumRate sums the per-second rate of a raw series over rng by cluster and resource.
func (s Spec) sumRate(series, rng string, matchers ...string) string {
	return fmt.Sprintf("sum %s (rate(%s[%s]))", s.By(), s.Series(series, matchers...), rng)
}

// Series is the one place Spec.Selector is applied: it renders a selector
// of a raw exporter series with the Spec's matchers and the given ones.
func (s Spec) Series(name string, matchers ...string) string {
	return promql.Selector(name, append([]string{s.Selector}, matchers...)...)
}

// By is the grouping of every aggregation: the cluster label, resource and
// the given labels, so multi-cluster stores keep clusters apart.
func (s Spec) By(extra ...string) string {
	return promql.By(append([]string{s.ClusterLabel, catalog.LabelResource}, extra...)...)
}

// Rule selects one SLO's series of a recording rule.
func Rule(record, slo string) string {
	return promql.Selector(record, promql.Eq(LabelSLO, slo))
}
