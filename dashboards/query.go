package dashboards

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Names of the dashboard variables, and Grafana's rate interval.
const (
	varDatasource = "datasource"
	varCluster    = "cluster"
	varResource   = "resource"
	rateInterval  = "$__rate_interval"
)

// scope says which matchers a selector carries.
type scope int

const (
	// scopeExporter: Spec.Selector only (the cluster variable's own query).
	scopeExporter scope = iota
	// scopeCluster: plus the cluster variable (exporter series without a
	// resource label, and the resource variable's query).
	scopeCluster
	// scopeResource: plus the resource variable (per-resource exporter series).
	scopeResource
	// scopeRule: the cluster and resource variables without Spec.Selector,
	// for recording rules and ALERTS: the rules aggregate by cluster,
	// resource and slo, so the exporter's job/namespace labels are gone.
	scopeRule
)

// selector returns the braces of a PromQL vector selector for scope, with
// extra matchers appended. It is the only place that writes Spec.Selector,
// the cluster label or the dashboard variables into a query.
func (c Config) selector(s scope, extra ...string) string {
	var ms []string
	if s != scopeRule && c.Spec.Selector != "" {
		ms = append(ms, c.Spec.Selector)
	}
	if s >= scopeCluster {
		ms = append(ms, promql.Re(c.Spec.ClusterLabel, "$"+varCluster))
	}
	if s >= scopeResource {
		ms = append(ms, promql.Re(catalog.LabelResource, "$"+varResource))
	}
	ms = append(ms, extra...)
	if len(ms) == 0 {
		return ""
	}
	return "{" + strings.Join(ms, ", ") + "}"
}

// series returns a selected series of a catalog family: suffix is "" or, for
// a histogram, "_bucket", "_sum" or "_count".
func (c Config) series(m catalog.Metric, suffix string, extra ...string) string {
	s := scopeCluster
	if slices.Contains(m.Labels, catalog.LabelResource) {
		s = scopeResource
	}
	return m.Name + suffix + c.selector(s, extra...)
}

// rule returns a selected recording-rule (or ALERTS) series.
func (c Config) rule(name string, extra ...string) string {
	return name + c.selector(scopeRule, extra...)
}

// by returns the grouping labels of a per-resource panel: the cluster label
// (unless single-cluster), the resource, then labels.
func (c Config) by(labels ...string) []string {
	var out []string
	if !c.SingleCluster {
		out = append(out, c.Spec.ClusterLabel)
	}
	return append(append(out, catalog.LabelResource), labels...)
}

// legend returns a legend format for a per-resource series, prefixed with
// the cluster when several clusters can be shown.
func (c Config) legend(format string) string {
	if c.SingleCluster {
		return format
	}
	return "{{" + c.Spec.ClusterLabel + "}} " + format
}

// label returns the legend placeholder of a label: {{label}}.
func label(name string) string { return "{{" + name + "}}" }

// aggregate wraps expr in op, grouped by labels when there are any.
func aggregate(op string, labels []string, expr string) string {
	if len(labels) == 0 {
		return fmt.Sprintf("%s(%s)", op, expr)
	}
	return fmt.Sprintf("%s by (%s) (%s)", op, strings.Join(labels, ", "), expr)
}

// rate is the per-second rate of a counter (or a histogram's _count), summed by labels.
func (c Config) rate(m catalog.Metric, suffix string, labels []string, extra ...string) string {
	return aggregate("sum", labels, fmt.Sprintf("rate(%s[%s])", c.series(m, suffix, extra...), rateInterval))
}

// increase is the increase of a counter over each rate interval, summed by labels.
func (c Config) increase(m catalog.Metric, labels []string, extra ...string) string {
	return aggregate("sum", labels, fmt.Sprintf("increase(%s[%s])", c.series(m, "", extra...), rateInterval))
}

// A histogram's panels read its classic series (_bucket, _count) or, where
// Prometheus stores it as one native series (convert_classic_histograms_to_nhcb:
// custom buckets, the same bounds), that series: each expression takes
// whichever is there.

// quantile is the q-quantile of a histogram, by labels.
func (c Config) quantile(q float64, m catalog.Metric, labels []string, extra ...string) string {
	buckets := c.rate(m, "_bucket", append([]string{"le"}, labels...), extra...)
	return fmt.Sprintf("histogram_quantile(%s, %s) or histogram_quantile(%s, %s)", promql.Num(q), buckets, promql.Num(q), c.rate(m, "", labels, extra...))
}

// observations is the per-second rate of a histogram's observations, summed by labels.
func (c Config) observations(m catalog.Metric, labels []string, extra ...string) string {
	native := aggregate("sum", labels, fmt.Sprintf("histogram_count(rate(%s[%s]))", c.series(m, "", extra...), rateInterval))
	return fmt.Sprintf("%s or %s", c.rate(m, "_count", labels, extra...), native)
}

// distribution is a histogram's rate of observations per bucket, for a
// heatmap: by le from its classic buckets, or the native histogram itself.
func (c Config) distribution(m catalog.Metric) string {
	return fmt.Sprintf("%s or %s", c.rate(m, "_bucket", []string{"le"}), c.rate(m, "", nil))
}

// judged is a time-slice SLI's signal per resource as its bad-slice rule
// reads it: the minimum of the gauge over the Spec's slice window (so a
// quiet resource's bookmark sawtooth is not shown as a breach), less the
// maximum of its allowance when it has one (the height of the resource's
// healthy sawtooth), not below 0; then aggregated with op by labels. It is
// above the SLO threshold exactly when the slice is bad.
func (c Config) judged(op string, d slo.SLI, labels []string) string {
	per := c.by()
	expr := aggregate("max", per, fmt.Sprintf("min_over_time(%s[%s])", c.series(d.Signal, ""), c.Spec.SliceWindow))
	if d.Allowance != nil {
		allowance := aggregate("max", per, fmt.Sprintf("max_over_time(%s[%s])", c.series(*d.Allowance, ""), c.Spec.SliceWindow))
		expr = fmt.Sprintf("clamp_min(%s - %s, 0)", expr, allowance)
	}
	if slices.Equal(labels, per) {
		return expr
	}
	return aggregate(op, labels, expr)
}

// ruleLabels are the labels every SLO recording rule carries.
func (c Config) ruleLabels() []string {
	return []string{c.Spec.ClusterLabel, catalog.LabelResource, slo.LabelSLO}
}

// burnRate is the error ratio of slo over window divided by its error budget
// (1 - the recorded objective): 1 spends the budget exactly in the budget period.
func (c Config) burnRate(name, window string) string {
	sel := promql.Eq(slo.LabelSLO, name)
	return fmt.Sprintf("%s / on (%s) group_left () (1 - %s)",
		c.rule(slo.ErrorRatioRule(window), sel), strings.Join(c.ruleLabels(), ", "), c.rule(slo.RuleObjective, sel))
}

// sli is the good ratio (1 - error ratio) of slo over window.
func (c Config) sli(name, window string) string {
	return "1 - " + c.rule(slo.ErrorRatioRule(window), promql.Eq(slo.LabelSLO, name))
}

// percentile names a quantile: 0.99 → "p99", 0.995 → "p99.5", 0.99995 →
// "p99.995" (not rounded up to "p100").
func percentile(q float64) string { return "p" + percent(q) }

// badShare is the share of bad events of an SLI that counts them directly
// (slo.SLI.BadEvents) over the rate interval per resource, aggregated with
// op by labels.
func (c Config) badShare(op string, d slo.SLI, labels []string) string {
	per := c.by()
	sum := func(series []slo.Series) string {
		var terms []string
		for _, s := range series {
			m, _ := catalog.Lookup(s.Name)
			terms = append(terms, c.rate(m, "", per, s.Matchers...))
		}
		return strings.Join(terms, " + ")
	}
	expr := fmt.Sprintf("(%s) / (%s > 0)", sum(d.BadEvents), sum(d.Totals))
	if slices.Equal(labels, per) {
		return expr
	}
	return aggregate(op, labels, expr)
}
