// Package dashboards builds the Grafana dashboards of rvsync-slo with the
// grafana-foundation-sdk: Overview (is every informer cache in sync, and
// which resources are worst), Resource detail (every signal of the selected
// resources) and SLOs (SLI against objective, burn rate per window, error
// budget and the state of the SLO alerts).
//
// Dashboards are generated, never hand-edited: Render turns a Config (the
// same slo.Spec the rule generator reads, so thresholds match the alerts)
// into deterministic JSON that `make generate` writes into the chart. Every
// metric and recording-rule name comes from pkg/catalog and slo, and every label
// selector is built by one helper (Config.selector), so a custom
// Spec.Selector or cluster label reaches every query. RenderHelmTemplates
// writes the same dashboards as Helm templates, so the chart's values move
// them as they move the rules: build notes the parts that show one SLO, and
// the templates keep them only while the values enable it, laying the
// panels out as build does.
//
// Layout: config.go holds Config and Render; query.go the PromQL
// expressions; panel.go the base constructors of panels, queries and
// variables; overview.go, resource.go and slos.go one dashboard each,
// stages.go the resource dashboard's row on where the delay is; helm.go
// the chart's templates.
package dashboards
