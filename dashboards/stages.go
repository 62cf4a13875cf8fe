//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// howToJoin says how to give the stage rules the API servers' series.
const howToJoin = "The stages need the API servers' own metrics, scraped under the job of the chart value slo.apiServerJob (default apiserver). kube-prometheus-stack scrapes them so with no setting. Plain Prometheus: add a scrape job for the API servers (kubernetes_sd_configs role endpoints, the default/kubernetes endpoints, TLS with the service account's CA and token) and set slo.apiServerJob to its name. Managed control planes that hide the API servers' metrics leave the stages out: the alerts then read as without them."

// stagePanels answer on-call's first question, where the delay is: the
// worst stage now, whether the API servers' series are joined, each
// stage's delay, each API server's watch cache against the head, and the
// client's delay end to end (slo.Spec.StageRecords).
func (c Config) stagePanels() []cog.Builder[dashboard.Panel] {
	stageLegend := label(catalog.LabelResource) + " " + label(slo.LabelStage) + " " + label(slo.LabelInstance) + " (" + label(slo.LabelSignal) + ")"
	return []cog.Builder[dashboard.Panel]{
		defaultStat("Where is the delay now",
			"The stage with the largest delay, from a second on (rvsync_stage:delay:worst): etcd_to_cache names the API server whose watch cache trails etcd, cache_to_client the stretch between the watch cache and the client (the server's dispatch to watchers or the network; an API server when it closes slow watchers), client the client itself (its queue, its store, its handlers). Every alert about the resource ends its description with it. Good: empty, no stage a second late (empty also while the API servers' series are missing: see the panel beside). "+howToJoin,
			unitSeconds, thresholds(yellow, step{60, orange}, step{300, red})).
			Span(halfWidth).TextMode(common.BigValueTextModeValueAndName).
			// now, not the last value of every stage that was worst in the time range
			WithTarget(prometheus.NewDataqueryBuilder().Expr(c.rule(slo.RuleWorstStage)).LegendFormat(c.legend(stageLegend)).Instant()),
		defaultStat("API servers joined",
			"API servers whose watch cache of the selected resources the stage rules compare with the head (rvsync_stage:watch_cache_behind:seconds). Good: every API server of the cluster. 0: none, the stages are not measured and the alerts say nothing about where. "+howToJoin,
			unitNone, thresholds(red, step{1, green})).
			Span(halfWidth).
			Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: cog.ToPtr("none: scrape the API servers, set slo.apiServerJob")},
			}}}}).
			WithTarget(prometheusQuery(aggregate("count", nil, c.rule(slo.RuleWatchCacheBehind))+" or vector(0)", "API servers")),
		defaultTimeseries("Delay by stage",
			"Each stage's delay in seconds (rvsync_stage:delay:seconds), by what measured it: etcd_to_cache per API server (how long its watch cache trails the head, once its RV stands still beyond the cache's own usual pause between updates and a margin; 0 otherwise), cache_to_client from 1.37's dispatch latency per API server and as the client's delay end to end that no other stage explains, client from the informer's queue, wire-to-store lag and reconcile read delay. Good: every line below a second.",
			unitSeconds).Span(fullWidth).
			WithTarget(prometheusQuery(c.rule(slo.RuleStageDelay), c.legend(stageLegend))),
		defaultTimeseries("Watch cache behind the head, by API server",
			"Seconds each API server's watch cache trails the head of the resource's RV space: the revisions between them over the space's write rate, corrected for when each was sampled. A busy resource's cache stays near 0; a quiet one's saws up to etcd's progress-notify interval (its cache moves only at progress notifications, every 10 minutes by default) and is not blamed for that; a stalled cache climbs without bound. Good: every API server's line falls back to near 0 at least once every progress-notify interval.",
			unitSeconds).
			WithTarget(prometheusQuery(c.rule(slo.RuleWatchCacheBehind), c.legend(label(catalog.LabelResource)+" "+label(slo.LabelInstance)))),
		defaultTimeseries("Delay end to end",
			"The client's delay that the stages break down (rvsync_stage:delivery_delay:seconds): cache staleness above the freshness proof period as the staleness SLO judges it, the canary and event delivery p99, and the watch's silence past its bookmark period (an idle resource's only sign of a stalled path). Good: near 0.",
			unitSeconds).
			WithTarget(prometheusQuery(c.rule(slo.RuleDeliveryDelay), c.legend(label(catalog.LabelResource)+" "+label(slo.LabelSignal)))),
	}
}
