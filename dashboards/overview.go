//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"fmt"
	"math"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// sloSignal is how a dashboard shows the signal an SLO constrains, live:
// the Overview's stat (worst over the selected resources), its table column
// and its trend use the same expression with different grouping.
type sloSignal struct {
	title       func(c Config, o slo.SLO) string
	description string // what it shows; the threshold is appended
	unit        string
	// above says what the threshold is measured above ("" from 0), for
	// the SLO's title.
	above string
	expr  func(c Config, o slo.SLO, by []string) string
	// trend is the signal's time series; nil: expr by resource.
	trend func(c Config, o slo.SLO) *timeseries.PanelBuilder
}

// timeSlice is the signal of a time-slice SLO as its SLI judges it (see
// Config.judged), worst by labels.
func timeSlice(name, title, above, description string) sloSignal {
	d, _ := slo.SLIOf(name)
	return sloSignal{
		title: func(c Config, _ slo.SLO) string {
			return title + " (min over " + c.Spec.SliceWindow + ")"
		},
		description: description + " Minimised over the SLI's slice window, longer than the bookmark period, as the SLI judges it.",
		unit:        unitOf(d.Signal),
		above:       above,
		expr: func(c Config, _ slo.SLO, by []string) string {
			return c.judged("max", d, by)
		},
	}
}

// latency is the signal of an event-ratio SLO: a histogram at the
// objective's percentile, over the observations the SLI counts.
func latency(name string, m catalog.Metric, description string, trend func(Config, slo.SLO) *timeseries.PanelBuilder, matchers ...string) sloSignal {
	return sloSignal{
		title: func(_ Config, o slo.SLO) string {
			return name + " " + percentile(o.Objective)
		},
		description: description + " At the SLO's percentile.",
		unit:        unitSeconds,
		expr: func(c Config, o slo.SLO, by []string) string {
			if len(by) == 0 {
				// the worst resource's percentile, not the percentile of
				// every resource's observations pooled, where many fast
				// Lists of one resource would hide a slow one
				return aggregate("max", nil, c.quantile(o.Objective, m, c.by(), matchers...))
			}
			return c.quantile(o.Objective, m, by, matchers...)
		},
		trend: trend,
	}
}

// share is the signal of an SLO that counts its bad events directly: their
// share of all events over the rate interval, worst by labels.
func share(name, title, description string) sloSignal {
	d, _ := slo.SLIOf(name)
	return sloSignal{
		title:       func(Config, slo.SLO) string { return title },
		description: description,
		unit:        unitPercent,
		expr: func(c Config, _ slo.SLO, by []string) string {
			return c.badShare("max", d, by)
		},
	}
}

// sloSignals maps every SLO name of the catalog to its signal.
var sloSignals = map[string]sloSignal{
	slo.CacheStaleness: timeSlice(slo.CacheStaleness, "Cache staleness above proof period", " above the freshness proof period",
		"How far the informer cache trails the API server beyond its healthy sawtooth: seconds since the cache provably held everything committed, less the resource's freshness proof period (how high a quiet resource's staleness climbs before a bookmark proves it fresh again: about a minute with the exporter's freshness reads, up to ~11 minutes without them on etcd's default 10-minute progress notify); 0 while within it. A stalled watch grows without bound."),
	slo.RVLag: timeSlice(slo.RVLag, "RV lag", "",
		"Revisions the informer cache is behind, from its own deliveries: how far behind the head its events were when delivered (0 for an idle resource, whatever the rest of the cluster writes), or head minus informer resource version once its watch has been silent for two bookmark periods."),
	slo.CanaryDelivery: latency("Canary delivery", catalog.CanaryDeliveryLatency,
		"Time from a canary write to its delivery by the exporter's own informer: the exact, active freshness signal.",
		Config.canaryLatency),
	slo.ListLatency: latency("List latency", catalog.ListDuration,
		"Duration of the informers' List pages and of head probes (watch-list syncs excluded, as in the SLI).",
		Config.recordedListLatency,
		slo.ListKinds),
	slo.StaleReads: share(slo.StaleReads, "Stale-read ratio",
		"Share of the checked cache reads of sampled reconciles that were stale against a consistent live read made just before them, in controllers that embed pkg/probe's stale-read check (none: no data)."),
}

// signal returns the signal of o; validate has checked the name.
func signal(o slo.SLO) sloSignal { return sloSignals[o.Name] }

// goodBelow says what good looks like for a lower-is-better SLO signal.
func goodBelow(o slo.SLO, unit string) string {
	return fmt.Sprintf(" Good: at most %s (SLO %q, objective %s%%); red at or above it.",
		amount(limitOf(o), unit), o.Name, percent(o.Objective))
}

// limitOf is the line an SLO's signal should stay under: its threshold, or
// for an SLO without one (it counts bad events directly) the share of bad
// events its objective allows, rounded to 12 decimals so that 99 % allows
// 1 %, not the 1.0000000000000009 % of float subtraction.
func limitOf(o slo.SLO) float64 {
	if d, ok := slo.SLIOf(o.Name); ok && !d.Thresholded() {
		return math.Round((1-o.Objective)*1e12) / 1e12
	}
	return o.Threshold
}

// amount writes a value with its unit in prose.
func amount(v float64, unit string) string {
	if unit == unitPercent {
		return percent(v) + " %"
	}
	return promql.Num(v) + " " + unitWord(unit)
}

// percent writes a share as a percentage, rounded to 9 decimals: an
// objective of 0.901 is 90.1 %, not the 90.10000000000001 of float
// multiplication (the chart's templates compute it in decimal).
func percent(v float64) string { return promql.Num(math.Round(v*1e11) / 1e9) }

// unitWord names a unit in prose.
func unitWord(unit string) string {
	switch unit {
	case unitSeconds:
		return "s"
	case unitRevisions:
		return "revisions"
	}
	return ""
}

// Overview builds the Overview dashboard: is every selected informer cache
// in sync, how much error budget is left, which resources are worst, and
// how the signals moved.
func Overview(cfg Config) (dashboard.Dashboard, error) {
	return build(cfg, uidOverview, "rvsync / Overview",
		"Are the informer caches of the selected resources in sync with the API server?",
		func(c Config, b *board) {
			b.row("Now", "")
			b.panels("", c.resourceStats()...)
			for _, o := range c.enabledSLOs() {
				b.panels(o.Name, c.sloStat(o))
			}
			b.panels("", c.versionStat())
			b.row("Error budget and worst resources", "")
			b.panels("", c.budgetStat(), c.worstResources())
			b.row("Trends", "")
			for _, o := range c.enabledSLOs() {
				b.panels(o.Name, c.trend(o))
			}
			b.panels("", c.relists(), c.regressions(), c.unconverged(), c.watchErrors())
		})
}

// resourceStats open the "Now" row: resources in sync and not ok. One
// stat per enabled SLO (sloStat) and the exporters' versions follow.
func (c Config) resourceStats() []cog.Builder[dashboard.Panel] {
	synced := c.series(catalog.InformerSynced, "")
	return []cog.Builder[dashboard.Panel]{
		defaultStat("Resources in sync",
			"Selected resources whose informer has completed its initial list, against all selected resources. Good: both numbers equal.",
			unitNone, thresholds(green)).
			TextMode(common.BigValueTextModeValueAndName).GraphMode(common.BigValueGraphModeNone).
			WithTarget(prometheusQuery(aggregate("sum", nil, synced), "in sync")).
			WithTarget(prometheusQuery(aggregate("count", nil, synced), "total")),
		defaultStat("Resources not ok",
			"Selected resources whose state is not ok, so some of their signals are unknown: head_unknown (no head probe answered lately: no lag, no staleness), ahead_of_head (the informer holds resource versions of another history: etcd restored, or another etcd), opaque_rv (resource versions are not integers: expected for an extension API server, no RV math). The Resource detail dashboard shows which. Good: 0.",
			unitNone, thresholds(green, step{1, orange})).
			GraphMode(common.BigValueGraphModeNone).
			WithTarget(prometheusQuery(aggregate("sum", nil, c.notOK()), "not ok")),
	}
}

// sloStat shows an SLO's signal for the worst selected resource, with
// thresholds at its limit.
func (c Config) sloStat(o slo.SLO) cog.Builder[dashboard.Panel] {
	s := signal(o)
	return defaultStat(s.title(c, o)+", worst", s.description+" Shows the worst selected resource."+goodBelow(o, s.unit), s.unit, upTo(limitOf(o))).
		WithTarget(prometheusQuery(s.expr(c, o, nil), "worst"))
}

// versionStat counts the running exporters by version.
func (c Config) versionStat() cog.Builder[dashboard.Panel] {
	return defaultStat("Exporters by version",
		"Running rvsync exporters (or controllers embedding pkg/probe) by version. Good: at least one, all on the same version.",
		unitNone, thresholds(red, step{1, green})).
		TextMode(common.BigValueTextModeValueAndName).GraphMode(common.BigValueGraphModeNone).
		WithTarget(prometheusQuery(aggregate("count", []string{catalog.LabelVersion}, c.series(catalog.BuildInfo, "")), label(catalog.LabelVersion)))
}

// budgetStat shows the error budget left per SLO, worst resource.
func (c Config) budgetStat() cog.Builder[dashboard.Panel] {
	return defaultStat("Error budget remaining",
		fmt.Sprintf("Share of each SLO's error budget over %s left for its worst selected resource. Good: above 0 (green from 25%%); below 0 the SLO is broken for the period.", c.Spec.BudgetPeriod),
		unitPercent, thresholds(red, step{0, orange}, step{0.25, green})).
		Span(8).Height(panelHeight).
		TextMode(common.BigValueTextModeValueAndName).GraphMode(common.BigValueGraphModeNone).
		WithTarget(prometheusQuery(aggregate("min", []string{slo.LabelSLO}, c.rule(slo.RuleErrorBudgetRemaining)), label(slo.LabelSLO)))
}

// worstResources is a table of every selected resource, worst first; a
// resource's name opens its resource dashboard.
func (c Config) worstResources() cog.Builder[dashboard.Panel] {
	var cols []column
	for _, o := range c.Spec.SLOs { // a disabled SLO's column is left out, keeping the others' ref IDs
		s := signal(o)
		cols = append(cols, column{name: s.title(c, o), unit: s.unit, expr: s.expr(c, o, c.by()), slo: o.Name})
	}
	cols = append(cols,
		column{name: "Synced", unit: unitNone, expr: aggregate("min", c.by(), c.series(catalog.InformerSynced, ""))},
		column{name: "Not ok", unit: unitNone, expr: c.notOK()},
		column{name: "Objects", unit: unitObjects, expr: aggregate("sum", c.by(), c.series(catalog.Objects, ""))},
		column{name: "Relists/s", unit: unitOpsPerSec, expr: c.rate(catalog.Relists, "", c.by())},
	)
	return c.defaultTable("Resources, worst first",
		"One row per selected resource with its current SLO signals, whether its informer is synced, whether its state is not ok (1: some signals unknown, see Resources not ok), its cached objects and its relist rate; sorted by the first column, worst first. Good: every signal below its SLO threshold, Synced 1, Not ok 0, relists near 0.",
		nil, cols...).Span(16).
		OverrideByName(catalog.LabelResource, []dashboard.DynamicConfigValue{c.resourceLink()})
}

// trend is the time series of an SLO's signal by resource, with the SLO
// threshold as a line.
func (c Config) trend(o slo.SLO) *timeseries.PanelBuilder {
	s := signal(o)
	if s.trend != nil {
		return s.trend(c, o)
	}
	p := defaultTimeseries(s.title(c, o)+" by resource", s.description+goodBelow(o, s.unit), s.unit).
		WithTarget(prometheusQuery(s.expr(c, o, c.by()), c.legend(label(catalog.LabelResource))))
	return c.sloLimit(p, o.Name)
}

// sloOf returns the named SLO of the Spec, or of the default Spec when the
// Spec leaves it out, so panels that show its signal know the percentile.
func (c Config) sloOf(name string) slo.SLO {
	if o, err := c.Spec.SLO(name); err == nil {
		return o
	}
	o, _ := slo.DefaultSpec().SLO(name)
	return o
}

// listLatency shows List latency at the list SLO's percentile by resource
// and labels, with the SLO threshold as a line: Lists of every kind, for
// one resource's dashboard.
func (c Config) listLatency(o slo.SLO, labels ...string) *timeseries.PanelBuilder {
	p := defaultTimeseries("List latency "+percentile(o.Objective)+" by resource and "+strings.Join(labels, ", "),
		"Duration of Lists (each page), streaming watch-list syncs and head probes at the List SLO's percentile, by resource and "+strings.Join(labels, " and ")+". The SLO counts List pages and head probes, not watch-list syncs, whose duration grows with the collection."+goodBelow(o, unitSeconds),
		unitSeconds)
	return c.sloLimit(c.percentiles(p, catalog.ListDuration, []float64{o.Objective}, labels...), o.Name)
}

// recordedListLatency is the overview's List-latency trend: the List SLO's
// percentile of the Lists it counts, by resource and kind, as the rules
// record it over their shortest window (slo.QuantileRule), a read of one
// series per resource and kind.
func (c Config) recordedListLatency(o slo.SLO) *timeseries.PanelBuilder {
	w := c.Spec.RecordedWindows()[0]
	p := defaultTimeseries("List latency "+percentile(o.Objective)+" ("+w+") by resource and kind",
		"Duration of Lists (each page) and head probes, the Lists the SLO counts, at the List SLO's percentile over the last "+w+" (the fastest burn-rate alert's window), by resource and kind, as the SLO rules record it. The resource dashboard shows watch-list syncs too, at the dashboard's own rate interval."+goodBelow(o, unitSeconds),
		unitSeconds).
		WithTarget(prometheusQuery(c.rule(slo.QuantileRule(w), promql.Eq(slo.LabelSLO, o.Name)),
			c.legend(label(catalog.LabelResource)+" "+label(catalog.LabelKind)+" "+percentile(o.Objective))))
	return c.sloLimit(p, o.Name)
}

// canaryLatency shows the canary delivery latency at the median and at the
// canary SLO's percentile, with the SLO threshold as a line.
func (c Config) canaryLatency(o slo.SLO) *timeseries.PanelBuilder {
	qs := []float64{0.5, o.Objective}
	p := defaultTimeseries("Canary delivery latency "+percentile(qs[0])+" / "+percentile(qs[1]),
		"Exact time from a canary heartbeat write to its delivery by the exporter's own informer, median and SLO percentile. Good: well under the threshold line (on loopback: milliseconds)."+goodBelow(o, unitSeconds),
		unitSeconds)
	return c.sloLimit(c.percentiles(p, catalog.CanaryDeliveryLatency, qs), o.Name)
}

// notOK is 1 for each selected resource whose state is not ok, 0 otherwise.
func (c Config) notOK() string {
	return aggregate("max", c.by(), c.series(catalog.ResourceState, "", promql.Neq(catalog.LabelState, catalog.StateOK)))
}

// relists shows full lists by reason.
func (c Config) relists() cog.Builder[dashboard.Panel] {
	return defaultTimeseries("Relists by reason",
		"Full lists per second by resource and reason: initial at start, expired after 410 Gone (watch too old), error otherwise. Good: near 0 after start-up.",
		unitOpsPerSec).
		WithTarget(prometheusQuery(c.rate(catalog.Relists, "", c.by(catalog.LabelReason)), c.legend(label(catalog.LabelResource)+" "+label(catalog.LabelReason))))
}

// unconverged shows objects whose controller has not caught up.
func (c Config) unconverged() cog.Builder[dashboard.Panel] {
	return defaultTimeseries("Unconverged objects",
		"Objects whose status.observedGeneration is below metadata.generation: specs their controller has not acted on yet. Good: 0 or brief spikes after changes.",
		unitObjects).
		WithTarget(prometheusQuery(aggregate("sum", c.by(), c.series(catalog.UnconvergedObjects, "")), c.legend(label(catalog.LabelResource))))
}

// regressions counts resource-version regressions.
func (c Config) regressions() cog.Builder[dashboard.Panel] {
	return defaultTimeseries("RV regressions",
		"Times the head or informer resource version went backwards (etcd restored from a backup), per rate interval. Good: 0; any other value means a restore the caches had to recover from.",
		unitNone).
		WithTarget(prometheusQuery(c.increase(catalog.ResourceVersionRegressions, c.by()), c.legend(label(catalog.LabelResource))))
}

// watchErrors shows errors that ended or refused watches and lists.
func (c Config) watchErrors() cog.Builder[dashboard.Panel] {
	return defaultTimeseries("Watch errors by reason",
		"Errors per second that ended or refused a watch or list of the informer, by resource and reason. Good: 0; expired alone is normal after compaction, forbidden means missing RBAC.",
		unitOpsPerSec).
		WithTarget(prometheusQuery(c.rate(catalog.WatchErrors, "", c.by(catalog.LabelReason)), c.legend(label(catalog.LabelResource)+" "+label(catalog.LabelReason))))
}
