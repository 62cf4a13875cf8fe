package alerts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
)

// sli says where an SLO's indicator comes from. There is one per name in
// catalog.SLOs(); the Spec only chooses objectives and thresholds.
type sli struct {
	kind  SLIKind
	alert string // stem of the burn-rate alert name, e.g. ListLatency
	title string // human name in annotations, e.g. "List latency"
	bad   string // what a bad event or slice is, with a %s for the threshold

	// Event ratio: good events are observations of the histogram good with
	// le <= threshold (and goodMatchers); all events are the series total
	// with totalMatchers.
	good          catalog.Metric
	goodMatchers  []string
	total         string
	totalMatchers []string

	// Time slice: a slice is bad when the minimum of signal over the slice
	// window is above the threshold.
	signal catalog.Metric
}

// listKinds are the Lists the List-latency SLI counts: the informer's List
// pages and the head probes. Watch-list syncs are left out: their duration
// grows with the collection, not with API server slowness.
var listKinds = re(catalog.LabelKind, catalog.KindList, catalog.KindProbe)

var slis = map[string]sli{
	catalog.SLOListLatency: {
		kind: EventRatio, alert: "ListLatency", title: "List latency",
		bad:           "Lists (informer pages and head probes) slower than %ss or failed",
		good:          catalog.ListDuration,
		goodMatchers:  []string{listKinds, eq(catalog.LabelResult, catalog.ResultSuccess)},
		total:         catalog.ListDuration.Name + "_count",
		totalMatchers: []string{listKinds},
	},
	catalog.SLOCanaryDelivery: {
		kind: EventRatio, alert: "CanaryDelivery", title: "Canary delivery",
		bad:           "canary writes not delivered by the informer within %ss",
		good:          catalog.WatchDeliveryLatency,
		total:         catalog.CanaryWrites.Name,
		totalMatchers: []string{eq(catalog.LabelResult, catalog.ResultSuccess)},
	},
	catalog.SLOCacheStaleness: {
		kind: TimeSlice, alert: "CacheStaleness", title: "Cache staleness",
		bad:    "time with cache staleness above %ss",
		signal: catalog.CacheStaleness,
	},
	catalog.SLORVLag: {
		kind: TimeSlice, alert: "ResourceVersionLag", title: "Resource-version lag",
		bad:    "time with the informer more than %s revisions behind head",
		signal: catalog.ResourceVersionLag,
	},
}

// errorRatio is the expression of the SLO's error ratio over rng (a PromQL
// range), computed from raw series. Event ratios are 1 - good/total, with no
// sample (rather than NaN) when there were no events, so averages over time
// skip idle windows; a missing good series counts as zero good events.
// Time slices average the recorded bad-slice indicator.
func (s Spec) errorRatio(o SLO, rng string) string {
	d := slis[o.Name]
	if d.kind == TimeSlice {
		return fmt.Sprintf("avg_over_time(%s[%s])", sloRule(catalog.RuleSLIBadSlice, o.Name), rng)
	}
	good := s.sumRate(d.good.Name+"_bucket", rng, append(d.goodMatchers, leMatcher(o.Threshold))...)
	total := s.sumRate(d.total, rng, d.totalMatchers...)
	return fmt.Sprintf("clamp_min(1 - ((%s) or (0 * %s)) / (%s > 0), 0)", good, total, total)
}

// badSlice is the expression of a time-slice SLO's bad-slice indicator: 1
// when the signal stayed above the threshold for the whole slice window, 0
// otherwise. The minimum over a window longer than the bookmark period is
// taken right after a bookmark, so a quiet resource's sawtooth reads ~0.
func (s Spec) badSlice(o SLO) string {
	d := slis[o.Name]
	return fmt.Sprintf("max %s (min_over_time(%s[%s])) > bool %s",
		s.by(), s.series(d.signal.Name), s.SliceWindow, num(o.Threshold))
}

// sumRate sums the per-second rate of a raw series over rng by cluster and resource.
func (s Spec) sumRate(series, rng string, matchers ...string) string {
	return fmt.Sprintf("sum %s (rate(%s[%s]))", s.by(), s.series(series, matchers...), rng)
}

// series is the one place Spec.Selector is applied: it renders a selector
// of a raw exporter series with the Spec's matchers and the given ones.
func (s Spec) series(name string, matchers ...string) string {
	var all []string
	if s.Selector != "" {
		all = append(all, s.Selector)
	}
	if all = append(all, matchers...); len(all) == 0 {
		return name
	}
	return name + "{" + strings.Join(all, ", ") + "}"
}

// by is the grouping of every aggregation: the cluster label, resource and
// any extra labels, so multi-cluster stores keep clusters apart.
func (s Spec) by(extra ...string) string {
	return "by (" + strings.Join(append([]string{s.ClusterLabel, catalog.LabelResource}, extra...), ", ") + ")"
}

// sloRule selects one SLO's series of a recording rule of this package.
func sloRule(record, slo string) string {
	return record + "{" + eq(catalog.LabelSLO, slo) + "}"
}

// leMatcher selects the histogram bucket of threshold. Prometheus 3 stores
// whole-number bounds as "30.0", Prometheus 2 as "30"; the regexp takes both.
func leMatcher(threshold float64) string {
	v := num(threshold)
	if strings.ContainsAny(v, ".e") {
		return eq("le", v)
	}
	return fmt.Sprintf(`le=~"%s(\\.0)?"`, v)
}

func eq(label, value string) string { return fmt.Sprintf("%s=%q", label, value) }

func re(label string, values ...string) string {
	return fmt.Sprintf("%s=~%q", label, strings.Join(values, "|"))
}

// num formats a number the shortest exact way, e.g. 1.5, 30, 0.99.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
