//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Grafana units.
const (
	unitSeconds   = "s"
	unitRevisions = "suffix: revisions"
	unitObjects   = "suffix: objects"
	unitOpsPerSec = "ops"
	unitPercent   = "percentunit"
	unitNone      = "none"
)

// unitOf returns the Grafana unit of a catalog family's values.
func unitOf(m catalog.Metric) string {
	switch m.Unit {
	case "seconds":
		return unitSeconds
	case "revisions":
		return unitRevisions
	case "objects":
		return unitObjects
	}
	return unitNone
}

// Threshold colours.
const (
	green  = "green"
	yellow = "yellow"
	orange = "orange"
	red    = "red"
)

// Panel sizes on Grafana's 24-column grid.
const (
	fullWidth   = 24
	halfWidth   = 12
	statHeight  = 4
	panelHeight = 8
)

// datasource points every panel and variable at the datasource variable.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + varDatasource + "}")}

// step is one threshold: from value on, the colour.
type step struct {
	value float64
	color string
}

// thresholds returns absolute thresholds starting at base.
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// upTo returns thresholds for a lower-is-better signal with an SLO limit:
// green up to the limit, red from it on.
func upTo(limit float64) *dashboard.ThresholdsConfigBuilder {
	return thresholds(green, step{limit, red})
}

// atLeast returns thresholds for a higher-is-better signal: red below the
// objective, green from it on.
func atLeast(objective float64) *dashboard.ThresholdsConfigBuilder {
	return thresholds(red, step{objective, green})
}

// prometheusQuery is a range query with a legend. Render assigns ref IDs.
func prometheusQuery(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Range()
}

// tableQuery is an instant query in table format: one row per series.
func tableQuery(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).Instant().Format(prometheus.PromQueryFormatTable)
}

// defaultTimeseries is a half-width time series with a table legend sorted
// by the latest value, and a shared tooltip.
func defaultTimeseries(title, description, unit string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).Description(description).Unit(unit).Datasource(datasource).
		Span(halfWidth).Height(panelHeight).
		LineWidth(1).FillOpacity(10).ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).Placement(common.LegendPlacementBottom).
			ShowLegend(true).Calcs([]string{"lastNotNull", "max"}).SortBy("Last *").SortDesc(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
}

// withLimit draws the thresholds as lines on a time series, e.g. the SLO
// threshold, so a reader sees at a glance which series cross it.
func withLimit(p *timeseries.PanelBuilder, t *dashboard.ThresholdsConfigBuilder) *timeseries.PanelBuilder {
	return p.Thresholds(t).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine))
}

// sloLimit draws the threshold of the named SLO on p when the SLO is enabled.
func (c Config) sloLimit(p *timeseries.PanelBuilder, slo string) *timeseries.PanelBuilder {
	t, ok := c.threshold(slo)
	if !ok {
		return p
	}
	c.marks.own(p, slo, []string{"fieldConfig", "defaults", "thresholds"}, []string{"fieldConfig", "defaults", "custom", "thresholdsStyle"})
	return withLimit(p, upTo(t))
}

// percentiles adds one query per quantile of a histogram to p, per resource.
func (c Config) percentiles(p *timeseries.PanelBuilder, m catalog.Metric, qs []float64, labels ...string) *timeseries.PanelBuilder {
	legend := label(catalog.LabelResource)
	for _, l := range labels {
		legend += " " + label(l)
	}
	for _, q := range qs {
		p = p.WithTarget(prometheusQuery(c.quantile(q, m, c.by(labels...)), c.legend(legend+" "+percentile(q))))
	}
	return p
}

// defaultStat is a stat panel showing the latest value with its colour
// from thresholds.
func defaultStat(title, description, unit string, t *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).Description(description).Unit(unit).Datasource(datasource).
		Span(4).Height(statHeight).Thresholds(t).
		ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeArea).
		TextMode(common.BigValueTextModeAuto).Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// column is one value column of a table built from instant queries.
type column struct {
	name string // header
	unit string
	expr string
	slo  string // the SLO whose signal it shows: left out while it is disabled
}

// defaultTable is a full-width table with one row per label set and one
// column per query: the instant queries are merged on their labels and
// their values renamed to the column names. The table is sorted by its
// first column. A column keeps its ref ID when a disabled SLO's column
// before it is left out.
func (c Config) defaultTable(title, description string, hidden []string, cols ...column) *table.PanelBuilder {
	p := table.NewPanelBuilder().
		Title(title).Description(description).Unit(unitNone).Datasource(datasource).
		Span(fullWidth).Height(panelHeight).Filterable(true)
	exclude := map[string]any{"Time": true}
	for _, h := range hidden {
		exclude[h] = true
	}
	rename := map[string]any{}
	var shown []column
	var refs []string
	for i, col := range cols {
		if col.slo != "" && !c.enabled(col.slo) {
			continue
		}
		ref := refID(i)
		p = p.WithTarget(tableQuery(col.expr).RefId(ref))
		rename["Value #"+ref] = col.name
		p = p.OverrideByName(col.name, []dashboard.DynamicConfigValue{{Id: "unit", Value: col.unit}})
		shown, refs = append(shown, col), append(refs, ref)
	}
	if len(shown) == 1 {
		rename = map[string]any{"Value": shown[0].name}
	}
	if len(shown) > 1 {
		p = p.WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
	}
	p = p.WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"excludeByName": exclude,
		"renameByName":  rename,
	}})
	if len(shown) > 0 {
		p = p.SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName(shown[0].name).Desc(true),
		})
	}
	c.marks.ownColumns(p, shown, refs)
	return p
}

// defaultHeatmap shows a histogram's buckets over time; the query must be
// a sum by (le) of bucket rates.
func defaultHeatmap(title, description, unit, expr string) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title(title).Description(description).Unit(unit).Datasource(datasource).
		Span(halfWidth).Height(panelHeight).Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(unit)).
		WithTarget(prometheusQuery(expr, label("le")).Format(prometheus.PromQueryFormatHeatmap))
}

// board lays out a dashboard's rows and panels in the order they are
// added. Each names the SLO it shows ("" for none): the callers leave out a
// disabled SLO's, and the chart's templates keep them only while the values
// enable that SLO (Config.marks).
type board struct {
	b     *dashboard.DashboardBuilder
	marks *helmMarks
	n     int // rows and panels so far
	noted []helmMark
}

// row starts a titled, expanded row; the panels added after it belong to it.
func (b *board) row(title, slo string) {
	b.b.WithRow(dashboard.NewRowBuilder(title))
	b.note(nil, slo)
}

// panels adds panels to the current row.
func (b *board) panels(slo string, ps ...cog.Builder[dashboard.Panel]) {
	for _, p := range ps {
		b.b.WithPanel(p)
		b.note(p, slo)
	}
}

// note records, for the chart's templates, the SLO of the next row or
// panel p and the parts of p that show one SLO.
func (b *board) note(p any, slo string) {
	at := []string{"panels", fmt.Sprint(b.n)}
	b.n++
	if b.marks == nil {
		return
	}
	if slo != "" {
		b.noted = append(b.noted, helmMark{path: at, slo: slo})
	}
	if p == nil {
		return
	}
	for _, m := range b.marks.within[p] {
		m.path = append(slices.Clone(at), m.path...)
		b.noted = append(b.noted, m)
	}
}

// refID returns the ref ID of the i-th query of a panel: A, B, … Z, AA, …
func refID(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return refID(i/26-1) + refID(i%26)
}

// Variables.

// datasourceVariable selects the Prometheus datasource.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder(varDatasource).Label("Data source").Type("prometheus")
}

// allOption is the "All" option selected by default.
var allOption = dashboard.VariableOption{
	Selected: cog.ToPtr(true),
	Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
	Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
}

// labelValuesVariable lists the values of a label on a selected series; "All"
// matches every value, and also series without the label.
func labelValuesVariable(name, title, series, labelName string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, %s)", series, labelName)
	return dashboard.NewQueryVariableBuilder(name).Label(title).
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
		IncludeAll(true).AllValue(".*").Current(allOption)
}

// clusterVariable picks the cluster, from the exporters' build info; hidden
// when single-cluster.
func (c Config) clusterVariable() *dashboard.QueryVariableBuilder {
	v := labelValuesVariable(varCluster, "Cluster", catalog.BuildInfo.Name+c.selector(scopeExporter), c.Spec.ClusterLabel)
	if c.SingleCluster {
		v = v.Hide(dashboard.VariableHideHideVariable)
	}
	return v
}

// defaultResource is the resource the resource detail dashboard opens on:
// the exporter's default canary resource (exporter/config), watched by
// default and the one resource whose every panel, canary included, has data.
const defaultResource = "configmaps"

// resourceVariable picks any number of watched resources of the cluster,
// by default all of them. On the resource detail dashboard (one is true) it
// has no "All" and defaults to defaultResource; where that is not watched,
// Grafana selects the query's first value. A link or the URL naming other
// resources wins.
func (c Config) resourceVariable(one bool) *dashboard.QueryVariableBuilder {
	v := labelValuesVariable(varResource, "Resource", catalog.InformerSynced.Name+c.selector(scopeCluster), catalog.LabelResource).
		Multi(true)
	if one {
		v = v.IncludeAll(false).Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr(defaultResource)},
			Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr(defaultResource)},
		})
	}
	return v
}

// links are the titles of the links between the dashboards.
var links = []struct{ uid, title string }{
	{uidOverview, "Overview"},
	{uidResource, "Resource detail"},
	{uidSLOs, "SLOs"},
}

// resourceLink is a table data link on the resource column that opens the
// resource dashboard at the row's resource and cluster, keeping the time
// range: the drill-down from a worst resource to its signals.
func (c Config) resourceLink() dashboard.DynamicConfigValue {
	url := "/d/" + c.UIDPrefix + uidResource + "/?var-" + varResource + "=${__value.raw}"
	if !c.SingleCluster {
		url += "&var-" + varCluster + `=${__data.fields["` + c.Spec.ClusterLabel + `"]}`
	}
	return dashboard.DynamicConfigValue{Id: "links", Value: []map[string]any{{
		"title": "Resource detail of ${__value.raw}",
		"url":   url + "&${__url_time_range}",
	}}}
}

// build assembles a dashboard: defaults and validation, the common header
// and variables, the panels added by body, then stable panel and query IDs.
func build(cfg Config, uid, title, description string, body func(c Config, b *board)) (dashboard.Dashboard, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return dashboard.Dashboard{}, err
	}
	b := dashboard.NewDashboardBuilder(title).
		Uid(c.UIDPrefix+uid).
		Description(description+" Generated by rvsync-gen from the dashboards package: do not edit by hand.").
		Tags(c.Tags).Editable().
		Refresh(c.Refresh).Time(c.TimeFrom, "now").Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(c.clusterVariable()).
		WithVariable(c.resourceVariable(uid == uidResource))
	for _, l := range links {
		if l.uid != uid { // links to the other dashboards, with the same variables and time range
			b.Link(dashboard.NewDashboardLinkBuilder(l.title).Type(dashboard.DashboardLinkTypeLink).
				Url("/d/" + c.UIDPrefix + l.uid + "/").IncludeVars(true).KeepTime(true))
		}
	}
	bd := &board{b: b, marks: c.marks}
	body(c, bd)
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	numberPanels(&d)
	addRunbookLinks(c, &d)
	if c.marks != nil {
		c.marks.boards[uid] = bd.noted
	}
	return d, nil
}

// numberPanels assigns panel IDs in layout order and ref IDs to queries
// that have none, so the JSON is stable and every query can be referenced.
func numberPanels(d *dashboard.Dashboard) {
	for i := range d.Panels {
		id := uint32(i + 1)
		if r := d.Panels[i].RowPanel; r != nil {
			r.Id = id
			continue
		}
		p := d.Panels[i].Panel
		p.Id = &id
		for j, t := range p.Targets {
			if q, ok := t.(prometheus.Dataquery); ok && q.RefId == nil {
				q.RefId = cog.ToPtr(refID(j))
				p.Targets[j] = q
			}
		}
	}
}
