//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// alertsSeries is Prometheus's built-in series of pending and firing alerts.
const alertsSeries = "ALERTS"

// SLOs builds the SLOs dashboard: the state of the SLO alerts, then one row
// per enabled SLO with its SLI against the objective, its burn rate per
// window of the alert table and its remaining error budget, per resource.
func SLOs(cfg Config) (dashboard.Dashboard, error) {
	return build(cfg, uidSLOs, "rvsync / SLOs",
		"Service-level objectives of informer cache sync, per resource: SLI against objective, burn rates, error budget and alerts.",
		func(c Config, b *board) {
			b.row("Alerts", "")
			b.panels("", c.alertsTable())
			for _, o := range c.enabledSLOs() {
				b.row(c.sloTitle(o), o.Name)
				b.panels(o.Name, c.sloPanels(o)...)
			}
		})
}

// sloTitle names an SLO with its objective and threshold.
func (c Config) sloTitle(o slo.SLO) string {
	s := signal(o)
	return fmt.Sprintf("SLO %s: %s%% %s ≤ %s%s", o.Name, percent(o.Objective), o.Kind, amount(limitOf(o), s.unit), s.above)
}

// alertsTable lists the pending and firing SLO alerts of the selection.
func (c Config) alertsTable() cog.Builder[dashboard.Panel] {
	return c.defaultTable("SLO alerts",
		"Burn-rate alerts of the SLOs that are pending or firing now for the selected resources, with their severity (page or ticket) and windows. Good: empty.",
		[]string{"__name__"},
		column{name: "Active", unit: unitNone, expr: c.rule(alertsSeries, promql.Neq(slo.LabelSLO, ""))}).
		Height(6)
}

// sloPanels are the panels of one SLO's row.
func (c Config) sloPanels(o slo.SLO) []cog.Builder[dashboard.Panel] {
	resource := c.legend(label(catalog.LabelResource))
	budget := fmt.Sprintf("%s error budget", c.Spec.BudgetPeriod)
	return []cog.Builder[dashboard.Panel]{
		defaultStat(fmt.Sprintf("SLI over %s", c.Spec.BudgetPeriod),
			fmt.Sprintf("Share of good %s over the budget period, per resource. Good: at or above the objective %s%% (green); red below it.", sliUnit(o), percent(o.Objective)),
			unitPercent, atLeast(o.Objective)).
			Span(6).Height(panelHeight).Decimals(2).
			WithTarget(prometheusQuery(c.sli(o.Name, c.Spec.BudgetPeriod), resource)),
		withLimit(defaultTimeseries("SLI vs objective",
			fmt.Sprintf("Share of good %s over %s per resource, against the objective line. Good: above the line.", sliUnit(o), c.sliWindow()),
			unitPercent), atLeast(o.Objective)).
			Span(6).
			WithTarget(prometheusQuery(c.sli(o.Name, c.sliWindow()), resource+" SLI "+c.sliWindow())).
			WithTarget(prometheusQuery(aggregate("max", []string{slo.LabelSLO}, c.rule(slo.RuleObjective, promql.Eq(slo.LabelSLO, o.Name))), "objective")),
		c.burnRates(o),
		defaultStat("Error budget remaining",
			fmt.Sprintf("Share of the %s left per resource: 1 - error ratio over the period / (1 - objective). Good: above 0 (green from 25%%); below 0 the objective is missed for the period.", budget),
			unitPercent, thresholds(red, step{0, orange}, step{0.25, green})).
			Span(6).Height(panelHeight).
			WithTarget(prometheusQuery(c.rule(slo.RuleErrorBudgetRemaining, promql.Eq(slo.LabelSLO, o.Name)), resource)),
	}
}

// sliWindow is the window of the SLI time series: the long window of the
// fastest burn-rate alert.
func (c Config) sliWindow() string { return c.Spec.Windows[0].Long }

// sliUnit says what an SLI counts.
func sliUnit(o slo.SLO) string {
	if o.Kind == slo.TimeSlice {
		return "time slices"
	}
	return "events"
}

// burnRates shows the burn rate of o per resource over every window of the
// alert table, with each alert's factor as a threshold line (orange for
// tickets, red for pages).
func (c Config) burnRates(o slo.SLO) cog.Builder[dashboard.Panel] {
	var steps []step
	for _, w := range c.Spec.Windows {
		color := orange
		if w.Severity == slo.SeverityPage {
			color = red
		}
		steps = append(steps, step{w.Factor, color})
	}
	slices.SortFunc(steps, func(a, b step) int { return cmp.Compare(a.value, b.value) })
	p := withLimit(defaultTimeseries("Burn rate by window",
		"Error ratio over each alert window divided by the error budget (1 - objective): 1 spends the budget exactly over the budget period. Lines mark the alert factors; an alert fires when both its long and short window are above its factor. Good: below 1.",
		unitNone), thresholds(green, steps...)).Span(6).Decimals(2).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).ShowLegend(true))
	for _, w := range c.windows() {
		p = p.WithTarget(prometheusQuery(c.burnRate(o.Name, w), c.legend(label(catalog.LabelResource)+" "+w)))
	}
	return p
}
