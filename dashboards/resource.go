//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Resource builds the Resource detail dashboard: every signal of the
// selected resources (pick one in the resource variable to study it), row by
// row: where the delay is (the stages, first: what a page's reader wants),
// resource versions, freshness, lists and watches, convergence, the stale
// reads of controllers that embed pkg/probe's stale-read check, and
// backpressure.
func Resource(cfg Config) (dashboard.Dashboard, error) {
	return build(cfg, uidResource, "rvsync / Resource detail",
		"Every sync signal of the selected resources: where the delay is, resource versions, freshness, lists and watches, convergence.",
		func(c Config, b *board) {
			for _, r := range []struct {
				title  string
				panels []cog.Builder[dashboard.Panel]
			}{
				{"Where is the delay", c.stagePanels()},
				{"Resource versions", c.versionPanels()},
				{"Freshness", c.freshnessPanels()},
				{"Lists and watches", c.listWatchPanels()},
				{"Convergence", c.convergencePanels()},
				{"Stale reads of embedded controllers", c.staleReadPanels()},
				{"Backpressure", c.backpressurePanels()},
			} {
				b.row(r.title, "")
				b.panels("", r.panels...)
			}
		})
}

// gauge is a time series of a per-resource gauge family, by resource.
func (c Config) gauge(title, description string, m catalog.Metric) *timeseries.PanelBuilder {
	return defaultTimeseries(title, description, unitOf(m)).WithTarget(c.gaugeQuery(m, ""))
}

// gaugeQuery is the query of a per-resource gauge family, max by resource;
// its legend is the resource, then what (when set).
func (c Config) gaugeQuery(m catalog.Metric, what string) *prometheus.DataqueryBuilder {
	legend := label(catalog.LabelResource)
	if what != "" {
		legend += " " + what
	}
	return prometheusQuery(aggregate("max", c.by(), c.series(m, "")), c.legend(legend))
}

// counter is a time series of the rate of a counter family (or of a
// histogram's observations) by resource and labels.
func (c Config) counter(title, description string, m catalog.Metric, labels ...string) *timeseries.PanelBuilder {
	legend := label(catalog.LabelResource)
	for _, l := range labels {
		legend += " " + label(l)
	}
	q := c.rate(m, "", c.by(labels...))
	if m.Type == catalog.Histogram {
		q = c.observations(m, c.by(labels...)) // a histogram counts its observations
	}
	return defaultTimeseries(title, description, unitOpsPerSec).
		WithTarget(prometheusQuery(q, c.legend(legend)))
}

func (c Config) versionPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		c.resourceState(),
		c.gauge("Head age",
			"Seconds since the latest head sample of the resource's RV space was requested. Good: below a few probe intervals (5 s by default); above, the head is unknown (state head_unknown): lag and staleness are not measured, and after 10 minutes RvsyncHeadUnknown opens a ticket.",
			catalog.HeadAge),
		defaultTimeseries("Head RV vs informer RV",
			"The latest resource version of the resource's RV space (head probe) and the highest one its informer has seen. The head is the revision of the whole etcd, so the gap is not lag: a busy resource's informer line follows the head, a quiet one's moves only when a bookmark brings the watch cache's catch-up with etcd (about every bookmark period with the exporter's freshness reads; without them, as often as etcd's progress notifications, every 10 minutes by default). Good: the informer line keeps rising with the head, never above it; absent for non-integer resource versions.",
			unitNone).Decimals(0).
			WithTarget(c.gaugeQuery(catalog.HeadResourceVersion, "head")).
			WithTarget(c.gaugeQuery(catalog.InformerResourceVersion, "informer")),
		c.sloLimit(c.gauge("RV lag",
			"Revisions the informer cache is behind, from its own deliveries, unsmoothed: while the watch is live, how far behind the head its latest events were when delivered (0 for an idle resource, whatever the rest of the cluster writes); once the watch has been silent for two bookmark periods, head minus informer resource version. Absent while the state is not ok. Good: near 0; the line is the RV-lag SLO threshold, judged on the minimum over a window.",
			catalog.ResourceVersionLag), slo.RVLag),
		c.regressions(),
		c.counter("Head timeline samples dropped",
			"Head probe samples dropped per second because the bounded head timeline was full; staleness then loses resolution. Good: 0.",
			catalog.TimelineDropped),
	}
}

// resourceState shows the state that limits each resource's signals over
// time, with the RV space the resource is probed in.
func (c Config) resourceState() cog.Builder[dashboard.Panel] {
	current := aggregate("max", c.by(catalog.LabelState), c.series(catalog.ResourceState, "")) + " == 1"
	space := aggregate("max", c.by(catalog.LabelSpace), c.series(catalog.ResourceInfo, ""))
	expr := fmt.Sprintf("(%s) * on (%s) group_left (%s) %s", current, strings.Join(c.by(), ", "), catalog.LabelSpace, space)
	return defaultTimeseries("Resource state",
		"The state that limits the resource's signals (a line at 1 while it holds), with the RV space (the etcd) the resource is probed in. Good: ok all the time. head_unknown: no head probe answered lately, so lag and staleness are unknown; ahead_of_head: the informer holds resource versions ahead of the head, from another history (etcd restored while the API server kept its watch cache) or another etcd (give the resource its own space); opaque_rv: resource versions are not integers (an extension API server), no RV math.",
		unitNone).Decimals(0).
		WithTarget(prometheusQuery(expr, c.legend(label(catalog.LabelResource)+" "+label(catalog.LabelState)+" (space "+label(catalog.LabelSpace)+")")))
}

func (c Config) freshnessPanels() []cog.Builder[dashboard.Panel] {
	canary := c.sloOf(slo.CanaryDelivery)
	staleness := c.sloOf(slo.CacheStaleness).Threshold
	event := "Lower bound of the time from commit to delivery of each watch event (resolution: the probe interval). Quiet resources have no samples. Good: mostly in the lowest buckets, rarely above 30 s."
	return []cog.Builder[dashboard.Panel]{
		c.gauge("Cache staleness and freshness proof period",
			fmt.Sprintf("Seconds since the informer cache provably held everything committed, unsmoothed, and the resource's freshness proof period: the highest staleness its healthy, quiet cache reached before a bookmark proved it fresh again (last 30 minutes). A busy resource stays near 0; a quiet one saws up to its proof period (about a minute with the exporter's freshness reads, up to ~11 minutes without them on etcd's default 10-minute progress notify); a stalled watch grows without bound. Good: staleness falls back below its proof period line; the staleness SLO counts a %s slice bad when even its minimum is more than %s s above the proof period.", c.Spec.SliceWindow, promql.Num(staleness)),
			catalog.CacheStaleness).
			WithTarget(c.gaugeQuery(catalog.FreshnessProofPeriod, "proof period")),
		c.gauge("Watch silence vs bookmark period",
			fmt.Sprintf("Seconds since the informer's watch last delivered anything (an event, a bookmark or the end of a list), and its measured bookmark period. A live watch brings a bookmark every period whatever etcd's progress-notify interval, so a quiet resource's silence saws from 0 up to the period. Good: silence below the bookmark period line; RvsyncWatchStalled pages when it stays above three periods (and %s s) for %s.", promql.Num(c.Spec.Symptoms.StalledAfterSeconds), c.Spec.Symptoms.StalledFor),
			catalog.WatchSilence).
			WithTarget(c.gaugeQuery(catalog.WatchBookmarkPeriod, "bookmark period")),
		defaultTimeseries("Time since last canary delivery",
			"Seconds since the exporter's informer last delivered a canary heartbeat. Good: below the canary period plus delivery latency (about 10 s); growing means writes or deliveries stopped.",
			unitSeconds).
			WithTarget(prometheusQuery("time() - "+aggregate("max", c.by(), c.series(catalog.CanaryLastDelivered, "")), c.legend(label(catalog.LabelResource)))),
		defaultHeatmap("Event delivery lag", event, unitSeconds,
			c.distribution(catalog.EventDeliveryLag)),
		c.percentiles(defaultTimeseries("Event delivery lag p50 / p99", event, unitSeconds),
			catalog.EventDeliveryLag, []float64{0.5, 0.99}),
		c.counter("Events with unknown delivery lag",
			"Watch events per second whose commit time no head probe bounded because the probes were failing: their delivery lag is unknown, not 0, and they are left out of the delivery-lag histogram. Good: 0; otherwise see the head probe errors.",
			catalog.EventDeliveryUnbounded),
		c.canaryLatency(canary),
		c.counter("Canary writes by result",
			"Canary heartbeat writes per second by result, and canaries lost (not delivered within the canary deadline). The canary SLO judges a write once it is delivered or lost; failed writes are not judged (RvsyncCanaryWriteErrors). Good: steady at the canary rate (one per 10 s by default), no errors, none lost.",
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
		c.gauge("Unobservable objects",
			"Objects of a convergence-tracked resource that report no observed generation at the configured path, so they are left out of the convergence signals. Good: 0; otherwise the resource's observedGenerationPath is wrong, or its controller never reports what it acted on (turn convergence off for it).",
			catalog.UnobservableObjects),
		c.gauge("Oldest unconverged generation",
			"Age of the oldest generation not yet observed by the object's controller. Good: 0, or shorter than a controller's normal reconcile time.",
			catalog.OldestUnconverged),
		c.percentiles(defaultTimeseries("Generation convergence p50 / p95 / p99",
			"Time from first seeing generation G of an object to seeing status.observedGeneration >= G. Good: seconds; above 300 s a controller is slow or stuck.",
			unitSeconds), catalog.GenerationConvergence, []float64{0.5, 0.95, 0.99}),
	}
}

// staleReadPanels show the sampled stale-read check of controllers that
// embed pkg/probe (probe.StaleReads); the exporter itself reconciles
// nothing, so without such a controller the row is empty.
func (c Config) staleReadPanels() []cog.Builder[dashboard.Panel] {
	behind := "Lower bound of how far behind each rv_behind stale read was: from the commit of the live version (bounded by the head probe that first saw it) to the cache read; only while the resource's RV space has a current head. Good: empty, or within the informer's event delivery lag."
	delay := "Time from the informer's delivery of an object's version into the cache to a sampled reconcile's read of it, for the object the reconcile was triggered for (reconcilers wrapped with ctrlstale.Triggered): the queue and the wait for a worker. Good: milliseconds; seconds mean the controller's workers are saturated."
	return []cog.Builder[dashboard.Panel]{
		c.trend(c.sloOf(slo.StaleReads)),
		c.counter("Stale reads by reason",
			"Stale cache reads per second by reason: rv_behind (the cache held an older version), replaced (another UID is live), deleted_live (deleted live, still cached), missing (live, not yet cached). Good: 0.",
			catalog.StaleReads, catalog.LabelReason),
		c.counter("Stale-read checks by result",
			"Cache reads of sampled reconciles per second by result: success (compared with a live read), error (the live read failed), rate_limited (not checked: the live-read token bucket was empty). Good: success at the sampled share of reads, few rate_limited; success stays below the configured live-read limit.",
			catalog.StaleReadChecks, catalog.LabelResult),
		c.percentiles(defaultTimeseries("Stale read behind p50 / p99", behind, unitSeconds),
			catalog.StaleReadBehind, []float64{0.5, 0.99}),
		c.percentiles(defaultTimeseries("Cache update to reconcile read p50 / p95", delay, unitSeconds),
			catalog.ReconcileReadDelay, []float64{0.5, 0.95}),
	}
}

// backpressurePanels show the informer's queue between its watch and its
// store: what arrived and cannot be read yet.
func (c Config) backpressurePanels() []cog.Builder[dashboard.Panel] {
	limit := c.Spec.Symptoms.QueueDepthLimit
	lag := "Time from the receipt of each delta on the informer's watch to its store holding it (one observation per delta, or per batch while more than 32 wait). Good: below a millisecond; seconds mean the store applies more slowly than deltas arrive."
	return []cog.Builder[dashboard.Panel]{
		withLimit(c.gauge("Informer queue depth",
			fmt.Sprintf("Deltas (events, bookmarks, list ends) the informer received on its watch and has not yet applied to its store: its readers cannot see them yet, and freshness, RV lag and canary delivery count them only once applied. Good: near 0, bursts that drain within minutes; RvsyncInformerBackpressure opens a ticket above the line (%s) for %s. A slow indexer, CPU starvation or a blocking processor make it grow; a slow transform backs up onto the watch instead (delivery lag grows).", promql.Num(limit), c.Spec.Symptoms.BackpressureFor),
			catalog.StoreQueueDepth).Decimals(0), upTo(limit)),
		c.gauge("Oldest queued delta",
			"Seconds the oldest delta waiting between the informer's watch and its store has waited: the live wire-to-store lag, growing while the store applies nothing. Good: 0.",
			catalog.StoreQueueOldest),
		c.percentiles(defaultTimeseries("Wire-to-store lag p50 / p99", lag, unitSeconds),
			catalog.StoreLag, []float64{0.5, 0.99}),
		c.counter("Deltas applied to the store",
			"Deltas per second the informer's store applied (observations of the wire-to-store lag). Good: keeps up with the event rate; a queue that grows while this stays flat is a store at its limit.",
			catalog.StoreLag),
	}
}
