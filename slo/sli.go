package slo

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

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
	// le <= threshold and GoodMatchers; all events are the sum of Totals.
	// An event counts only once it is good or bad: a canary write in
	// flight, a List not yet answered, are neither.
	Good         catalog.Metric
	GoodMatchers []string
	Totals       []Series
	// BadEvents, when set, counts the bad events directly (counters, no
	// threshold): the error ratio is their sum over the sum of Totals, and
	// Good is unused. Such an SLO has no threshold; its objective alone
	// says which share of events may be bad.
	BadEvents []Series

	// Time slice: a slice is bad when the minimum of Signal over the slice
	// window, less the maximum of Allowance (when set) over AllowanceMemory,
	// is above the threshold.
	Signal    catalog.Metric
	Allowance *catalog.Metric

	// Breakdown, on an event-ratio SLI of a histogram, are the labels
	// (beside cluster and resource) its objective's percentile is recorded
	// by (QuantileRule), for a dashboard trend of every resource at once: a
	// plain read of one recorded series per resource and label values,
	// where the raw buckets of 200 resources over a dashboard's six hours
	// cost Prometheus over a second per refresh.
	Breakdown []string
}

// AllowanceMemory is how far back a time-slice SLI's allowance is taken:
// the exporter's own memory of freshness-proof peaks, so the allowance
// survives what the exporter forgets (a relist, a new pod: max by cluster
// and resource takes the previous pod's series too).
const AllowanceMemory = "30m"

// Series is a raw series with label matchers.
type Series struct {
	Name     string
	Matchers []string
	// Histogram marks the observations of the histogram family Name: its
	// _count series, or the count of its native histogram where Prometheus
	// stores one (convert_classic_histograms_to_nhcb turns the exporter's
	// classic histograms into one native series each, with the same
	// bucket bounds). The rules read whichever is there.
	Histogram bool
}

// ListKinds matches the Lists the List-latency SLI counts: the informers'
// List pages and the head probes. Watch-list syncs are left out: their
// duration grows with the collection, not with API-server slowness.
var ListKinds = promql.Re(catalog.LabelKind, catalog.KindList, catalog.KindProbe)

var slis = map[string]SLI{
	ListLatency: {
		Kind: EventRatio, Alert: "ListLatency", Title: "List latency",
		Bad:          "Lists (informer pages and head probes) slower than %ss or failed (a 404 for a resource no longer served counts neither way)",
		Good:         catalog.ListDuration,
		GoodMatchers: []string{ListKinds, promql.Eq(catalog.LabelResult, catalog.ResultSuccess)},
		Totals:       []Series{{Name: catalog.ListDuration.Name, Histogram: true, Matchers: []string{ListKinds, promql.Neq(catalog.LabelResult, catalog.ResultNotFound)}}},
		Breakdown:    []string{catalog.LabelKind},
	},
	CanaryDelivery: {
		// a write is judged when it is delivered (good within the
		// threshold) or lost at the canary deadline; in flight, it is neither
		Kind: EventRatio, Alert: "CanaryDelivery", Title: "Canary delivery",
		Bad:  "canary writes delivered by the informer later than %ss, or lost",
		Good: catalog.CanaryDeliveryLatency,
		Totals: []Series{
			{Name: catalog.CanaryDeliveryLatency.Name, Histogram: true},
			{Name: catalog.CanaryLost.Name},
		},
	},
	CacheStaleness: {
		// judged above the resource's freshness proof period, the height of
		// its healthy sawtooth (how often bookmarks prove a quiet cache
		// fresh depends on etcd's progress-notify interval)
		Kind: TimeSlice, Alert: "CacheStaleness", Title: "Cache staleness",
		Bad:       "time with cache staleness more than %ss above its freshness proof period",
		Signal:    catalog.CacheStaleness,
		Allowance: &catalog.FreshnessProofPeriod,
	},
	RVLag: {
		Kind: TimeSlice, Alert: "ResourceVersionLag", Title: "Resource-version lag",
		Bad:    "time with the informer more than %s revisions behind head",
		Signal: catalog.ResourceVersionLag,
	},
	StaleReads: {
		// only controllers that embed pkg/probe's stale-read check
		// (probe.StaleReads) export these; the exporter reconciles nothing
		Kind: EventRatio, Alert: "StaleReads", Title: "Stale reads",
		Bad:       "cache reads of sampled reconciles that were stale against a live read",
		BadEvents: []Series{{Name: catalog.StaleReads.Name}},
		Totals:    []Series{{Name: catalog.StaleReadChecks.Name, Matchers: []string{promql.Eq(catalog.LabelResult, catalog.ResultSuccess)}}},
	},
}

// Thresholded reports whether the SLI judges each event or slice against
// the SLO's threshold; an SLI that counts bad events directly has none.
func (d SLI) Thresholded() bool { return len(d.BadEvents) == 0 }

// BadText says what a bad event or slice of o is, with o's threshold.
func (d SLI) BadText(o SLO) string {
	if !d.Thresholded() {
		return d.Bad
	}
	return fmt.Sprintf(d.Bad, promql.Num(o.Threshold))
}

// BurnAlertName is the name of the four burn-rate alerts of the SLO named
// name (their window labels tell them apart): Rvsync<SLI.Alert>BudgetBurn.
func BurnAlertName(name string) string {
	d, _ := SLIOf(name)
	return "Rvsync" + d.Alert + "BudgetBurn"
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
	total := s.sumRates(d.Totals, rng)
	if !d.Thresholded() {
		return fmt.Sprintf("clamp_max(((%s) or (0 * (%s))) / ((%s) > 0), 1)", s.sumRates(d.BadEvents, rng), total, total)
	}
	return fmt.Sprintf("clamp_min(1 - ((%s) or (0 * (%s))) / ((%s) > 0), 0)", s.goodRate(d, o, rng), total, total)
}

// Quantile is the expression of o's objective percentile over rng (its
// 0.95 quantile for an objective of 95 %) by cluster, resource and the SLI's
// Breakdown, over the events the SLI counts, from the classic buckets or the
// native histogram, whichever is stored; ok is false for an SLI without a
// Breakdown.
func (s Spec) Quantile(o SLO, rng string) (expr string, ok bool) {
	d := slis[o.Name]
	if len(d.Breakdown) == 0 || d.Kind != EventRatio || len(d.Totals) == 0 || !d.Totals[0].Histogram {
		return "", false
	}
	return s.histogramQuantile(promql.Num(o.Objective), d.Totals[0], rng, d.Breakdown...), true
}

// histogramQuantile is the q-quantile of histogram t over rng by cluster,
// resource and by, from its classic buckets or its native histogram,
// whichever is stored.
func (s Spec) histogramQuantile(q string, t Series, rng string, by ...string) string {
	classic := fmt.Sprintf("histogram_quantile(%s, sum %s (rate(%s[%s])))", q, s.By(append([]string{"le"}, by...)...), s.Series(t.Name+"_bucket", t.Matchers...), rng)
	native := fmt.Sprintf("histogram_quantile(%s, sum %s (rate(%s[%s])))", q, s.By(by...), s.Series(t.Name, t.Matchers...), rng)
	return classic + " or " + native
}

// goodRate is the per-second rate of o's good events over rng by cluster and
// resource: observations of the Good histogram at most the threshold (a
// bucket bound), from its classic bucket or, stored as a native histogram
// with custom buckets, as the share of its count below the bound, which at a
// bucket bound is exact.
func (s Spec) goodRate(d SLI, o SLO, rng string) string {
	classic := fmt.Sprintf("sum %s (rate(%s[%s]))", s.By(), s.Series(d.Good.Name+"_bucket", append(d.GoodMatchers, promql.Le(o.Threshold))...), rng)
	h := fmt.Sprintf("rate(%s[%s])", s.Series(d.Good.Name, d.GoodMatchers...), rng)
	native := fmt.Sprintf("sum %s (histogram_count(%s) * histogram_fraction(-Inf, %s, %s))", s.By(), h, promql.Num(o.Threshold), h)
	return fmt.Sprintf("(%s or %s)", classic, native)
}

// BadSlice is the expression of a time-slice SLO's bad-slice indicator: 1
// when the signal (less its allowance) stayed above the threshold for the
// whole slice window, 0 otherwise. The minimum over a window longer than the
// bookmark period is taken right after a bookmark proved freshness, and
// the allowance is the height of the resource's healthy sawtooth, so a
// quiet resource's sawtooth never burns budget, whatever etcd's
// progress-notify interval.
func (s Spec) BadSlice(o SLO) string {
	return fmt.Sprintf("(%s) > bool %s", s.sliceSignal(slis[o.Name]), promql.Num(o.Threshold))
}

// sliceSignal is a time-slice SLI's signal as its slices judge it: the
// minimum over the slice window, less the maximum of the allowance (when
// set) over AllowanceMemory.
func (s Spec) sliceSignal(d SLI) string {
	signal := fmt.Sprintf("max %s (min_over_time(%s[%s]))", s.By(), s.Series(d.Signal.Name), s.SliceWindow)
	if d.Allowance != nil {
		signal += fmt.Sprintf(" - max %s (max_over_time(%s[%s]))", s.By(), s.Series(d.Allowance.Name), AllowanceMemory)
	}
	return signal
}

// sumRates is the sum of the sumRate of each series.
func (s Spec) sumRates(series []Series, rng string) string {
	var out []string
	for _, t := range series {
		out = append(out, s.sumOver("rate", t, rng))
	}
	return strings.Join(out, " + ")
}

// sumOver sums fn (rate or increase) of a raw series over rng by cluster and
// resource; of a histogram's observations, from its classic _count or its
// native count, whichever is stored.
func (s Spec) sumOver(fn string, t Series, rng string) string {
	if !t.Histogram {
		return fmt.Sprintf("sum %s (%s(%s[%s]))", s.By(), fn, s.Series(t.Name, t.Matchers...), rng)
	}
	return fmt.Sprintf("(sum %s (%s(%s[%s])) or sum %s (histogram_count(%s(%s[%s]))))",
		s.By(), fn, s.Series(t.Name+"_count", t.Matchers...), rng, s.By(), fn, s.Series(t.Name, t.Matchers...), rng)
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

// MinBurnEvents is how many events an event-ratio SLO's long window must
// count before its burn-rate alerts fire: a resource that lists rarely (a
// quiet one's freshness reads, about one a minute) does not page on a
// couple of slow answers, while a real outage of a busy path, or hours of
// a quiet one, still count many more.
const MinBurnEvents = 10

// Enough is the condition that an event-ratio SLO's long window counted at
// least MinBurnEvents events (ok false for time-slice SLOs, whose windows
// are full of slices by construction).
func (s Spec) Enough(o SLO, long string) (cond string, ok bool) {
	d := slis[o.Name]
	if d.Kind != EventRatio {
		return "", false
	}
	var terms []string
	for _, t := range d.Totals {
		terms = append(terms, s.sumOver("increase", t, s.Scaled(long)))
	}
	return fmt.Sprintf("(%s) >= %d", strings.Join(terms, " + "), MinBurnEvents), true
}

// Covered is the condition that a burn-rate alert's long window holds
// enough history: the resource's exporter series existed MinCoverage of the
// window ago. A fresh install, a Prometheus that lost its data or a new
// resource cannot page "too fast over 6 hours" on minutes of data; the
// symptom alerts carry the first minutes.
func (s Spec) Covered(long string) string {
	d := time.Duration(float64(mustDuration(long)) * s.MinCoverage * s.windowScale())
	offset := model.Duration(max(d.Round(time.Second), time.Second)).String()
	return fmt.Sprintf("max %s (%s offset %s)", s.By(), s.Series(catalog.InformerSynced.Name), offset)
}
