//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"regexp"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// symptomRunbooks name the alert whose runbook a panel links when its
// queries read the series the alert fires on (the names are the alerts
// package's, which a test of it checks: dashboards may not import alerts).
var symptomRunbooks = []struct{ metric, alert string }{
	{catalog.WatchSilence.Name, "RvsyncWatchStalled"},
	{catalog.InformerSynced.Name, "RvsyncInformerNotSynced"},
	{catalog.Relists.Name, "RvsyncRelistStorm"},
	{catalog.ResourceVersionRegressions.Name, "RvsyncResourceVersionRegression"},
	{catalog.ListErrors.Name, "RvsyncListErrors"},
	{catalog.HeadProbeErrors.Name, "RvsyncHeadProbeErrors"},
	{catalog.CanaryLost.Name, "RvsyncCanaryLost"},
	{catalog.CanaryWrites.Name, "RvsyncCanaryWriteErrors"},
	{catalog.HeadAge.Name, "RvsyncHeadUnknown"},
	{catalog.StoreQueueDepth.Name, "RvsyncInformerBackpressure"},
}

// runbookStages is the anchor of the runbooks' section on the stages of
// a delay, which the panels reading the stage rules link.
const runbookStages = "where-is-the-delay"

// maxRunbookLinks bounds the links of one panel: the panel's header menu
// stays short.
const maxRunbookLinks = 3

// runbookAlerts returns the alerts whose runbooks a panel with these
// queries links: the burn-rate alert of the one SLO the queries read (its
// slo label or its SLI's series; none when they read several SLOs, as the
// overview's table does), then the symptom alerts of the series they read.
func runbookAlerts(exprs []string) []string {
	text := strings.Join(exprs, "\n")
	var burn []string
	for _, name := range slo.Names() {
		d, _ := slo.SLIOf(name)
		series := []string{d.Good.Name, d.Signal.Name}
		if strings.Contains(text, `slo="`+name+`"`) || slices.ContainsFunc(series, func(m string) bool { return m != "" && readsSeries(text, m) }) {
			burn = append(burn, slo.BurnAlertName(name))
		}
	}
	var out []string
	if len(burn) == 1 {
		out = burn
	}
	for _, r := range symptomRunbooks {
		if readsSeries(text, r.metric) && !slices.Contains(out, r.alert) {
			out = append(out, r.alert)
		}
	}
	if len(out) > maxRunbookLinks {
		out = out[:maxRunbookLinks]
	}
	return out
}

// readsSeries reports whether PromQL text reads the family name (a
// histogram's _bucket, _count and _sum series included).
func readsSeries(text, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `(_bucket|_count|_sum)?\b`).MatchString(text)
}

// addRunbookLinks links each panel to the runbooks of the alerts about what
// it shows (Config.Spec.RunbookURLPrefix plus the lower-cased alert name,
// as each alert's runbook_url), so a reader of a red panel finds what to do.
func addRunbookLinks(c Config, d *dashboard.Dashboard) {
	for i := range d.Panels {
		p := d.Panels[i].Panel
		if p == nil {
			continue
		}
		var exprs []string
		for _, t := range p.Targets {
			if q, ok := t.(prometheus.Dataquery); ok {
				exprs = append(exprs, q.Expr)
			}
		}
		for _, a := range runbookAlerts(exprs) {
			url := c.Spec.RunbookURLPrefix + strings.ToLower(a)
			p.Links = append(p.Links, dashboard.DashboardLink{Title: "Runbook: " + a, Type: dashboard.DashboardLinkTypeLink,
				Url: &url, TargetBlank: true, Tags: []string{}})
		}
		if slices.ContainsFunc(slo.StageRules(), func(r string) bool { return readsSeries(strings.Join(exprs, "\n"), r) }) {
			url := c.Spec.RunbookURLPrefix + runbookStages
			p.Links = append(p.Links, dashboard.DashboardLink{Title: "Runbooks: where is the delay", Type: dashboard.DashboardLinkTypeLink,
				Url: &url, TargetBlank: true, Tags: []string{}})
		}
	}
}
