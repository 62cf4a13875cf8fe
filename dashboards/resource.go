//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Resource builds the Resource detail dashboard: every signal of the
// selected resources (pick one in the resource variable to study it), row by
// row: resource versions, freshness, lists and watches, convergence.
func Resource(cfg Config) (dashboard.Dashboard, error) {
	return build(cfg, uidResource, "rvsync / Resource detail",
		"Every sync signal of the selected resources: resource versions, freshness, lists and watches, convergence.",
		func(c Config, b *dashboard.DashboardBuilder) {
			for _, r := range []struct {
				title  string
				panels []cog.Builder[dashboard.Panel]
			}{
				{"Resource versions", c.versionPanels()},
				{"Freshness", c.freshnessPanels()},
				{"Lists and watches", c.listWatchPanels()},
				{"Convergence", c.convergencePanels()},
			} {
				b.WithRow(row(r.title))
				for _, p := range r.panels {
					b.WithPanel(p)
				}
			}
		})
}

// gauge is a time series of a per-resource gauge family, by resource.
func (c Config) gauge(title, description string, m catalog.Metric) *timeseries.PanelBuilder {
	return defaultTimeseries(title, description, unitOf(m)).
		WithTarget(prometheusQuery(aggregate("max", c.by(), c.series(m, "")), c.legend(label(catalog.LabelResource))))
}

// counter is a time series of the rate of a counter family (or of a
// histogram's observations) by resource and labels.
func (c Config) counter(title, description string, m catalog.Metric, labels ...string) *timeseries.PanelBuilder {
	legend := label(catalog.LabelResource)
	for _, l := range labels {
		legend += " " + label(l)
	}
	suffix := ""
	if m.Type == catalog.Histogram {
		suffix = "_count" // a histogram counts its observations
	}
	return defaultTimeseries(title, description, unitOpsPerSec).
		WithTarget(prometheusQuery(c.rate(m, suffix, c.by(labels...)), c.legend(legend)))
}

func (c Config) versionPanels() []cog.Builder[dashboard.Panel] {
	resource := c.legend(label(catalog.LabelResource))
	return []cog.Builder[dashboard.Panel]{
		defaultTimeseries("Head RV vs informer RV",
			"The latest resource version of the resource's RV space (head probe) and the highest one its informer has seen. Good: the informer line touches the head line at least every bookmark period (about a minute); absent for non-integer resource versions.",
			unitNone).Decimals(0).
			WithTarget(prometheusQuery(aggregate("max", c.by(), c.series(catalog.HeadResourceVersion, "")), resource+" head")).
			WithTarget(prometheusQuery(aggregate("max", c.by(), c.series(catalog.InformerResourceVersion, "")), resource+" informer")),
		c.sloLimit(c.gauge("RV lag",
			"Head resource version minus informer resource version at each probe, unsmoothed: a quiet resource climbs until the next bookmark. Good: back to near 0 at least once a minute; the line is the RV-lag SLO threshold, judged on the minimum over a window.",
			catalog.ResourceVersionLag), slo.RVLag),
		c.regressions(),
		c.counter("Head timeline samples dropped",
			"Head probe samples dropped per second because the bounded head timeline was full; staleness then loses resolution. Good: 0.",
			catalog.TimelineDropped),
	}
}

func (c Config) freshnessPanels() []cog.Builder[dashboard.Panel] {
	canary := c.sloOf(slo.CanaryDelivery)
	event := "Lower bound of the time from commit to delivery of each watch event (resolution: the probe interval). Quiet resources have no samples. Good: mostly in the lowest buckets, rarely above 30 s."
	return []cog.Builder[dashboard.Panel]{
		c.sloLimit(c.gauge("Cache staleness",
			"Seconds since the informer cache provably held everything committed, unsmoothed: a quiet resource shows a sawtooth up to the bookmark period, a stalled watch grows without bound. Good: falls back to near 0 at least once per bookmark period (about a minute); the line is the staleness SLO threshold, judged on the minimum over a window.",
			catalog.CacheStaleness), slo.CacheStaleness),
		defaultTimeseries("Time since last canary delivery",
			"Seconds since the exporter's informer last delivered a canary heartbeat. Good: below the canary period plus delivery latency (about 10 s); growing means writes or deliveries stopped.",
			unitSeconds).
			WithTarget(prometheusQuery("time() - "+aggregate("max", c.by(), c.series(catalog.CanaryLastDelivered, "")), c.legend(label(catalog.LabelResource)))),
		defaultHeatmap("Event delivery lag", event, unitSeconds,
			c.rate(catalog.EventDeliveryLag, "_bucket", []string{"le"})),
		c.percentiles(defaultTimeseries("Event delivery lag p50 / p99", event, unitSeconds),
			catalog.EventDeliveryLag, []float64{0.5, 0.99}),
		c.canaryLatency(canary),
		c.counter("Canary writes by result",
			"Canary heartbeat writes per second by result. Good: steady at the canary rate (one per 10 s by default), no errors.",
			catalog.CanaryWrites, catalog.LabelResult).
			WithTarget(prometheusQuery(c.rate(catalog.CanaryLost, "", c.by()), c.legend(label(catalog.LabelResource)+" lost"))),
	}
}

func (c Config) listWatchPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		c.listLatency(c.sloOf(slo.ListLatency), catalog.LabelKind, catalog.LabelResult),
		c.counter("Lists by kind and result",
			"Lists (each page), watch-list syncs and head probes per second by kind and result. Good: probes at the probe rate, lists rare after start-up, no errors.",
			catalog.ListDuration, catalog.LabelKind, catalog.LabelResult),
		c.relists(),
		c.counter("Watch starts",
			"Watches started per second by the informer (each reconnection). Good: about one per watch timeout (5–10 min); more means watches are cut.",
			catalog.WatchStarts),
		c.watchErrors(),
		c.counter("List errors by reason",
			"Failed Lists and watch-lists of the informer per second, by reason. Good: 0; forbidden means missing RBAC, not_found a deleted CRD, opaque_rv an extension API server.",
			catalog.ListErrors, catalog.LabelReason),
		c.counter("Head probe errors by reason",
			"Failed head probes through this resource per second, by reason. Good: 0; the probe falls back to another resource of the RV space, so errors of one resource alone leave lag and staleness measured.",
			catalog.HeadProbeErrors, catalog.LabelReason),
		c.gauge("Objects in cache",
			"Objects held in the informer cache. Good: matches the object count in the cluster; a sudden drop to 0 means a relist in progress or a lost resource.",
			catalog.Objects),
		c.gauge("Informer synced",
			"1 when the informer has completed its initial list, 0 while it (re)lists. Good: 1.",
			catalog.InformerSynced),
	}
}

func (c Config) convergencePanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		c.unconverged(),
		c.gauge("Oldest unconverged generation",
			"Age of the oldest generation not yet observed by the object's controller. Good: 0, or shorter than a controller's normal reconcile time.",
			catalog.OldestUnconverged),
		c.percentiles(defaultTimeseries("Generation convergence p50 / p95 / p99",
			"Time from first seeing generation G of an object to seeing status.observedGeneration >= G. Good: seconds; above 300 s a controller is slow or stuck.",
			unitSeconds), catalog.GenerationConvergence, []float64{0.5, 0.95, 0.99}),
	}
}
