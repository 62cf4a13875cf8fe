package slo

import (
	"fmt"
	"strings"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Stages of a resource's delivery, from etcd to the client's handlers: the
// values of LabelStage. The stage rules (StageRecords) break the delay the
// exporter sees into them by joining the API servers' own metrics
// (docs/apiserver-metrics.md), so that a page says where the delay is.
const (
	// StageEtcdToCache: an API server's watch cache trails etcd (its
	// resource version against the exporter's head probe of the same RV
	// space). Named with the API server's instance.
	StageEtcdToCache = "etcd_to_cache"
	// StageCacheToClient: between the watch cache and the client's wire:
	// the server's dispatch to its watchers (1.37's dispatch latency,
	// watchers it terminated for being slow) and the network. Named with
	// the API server's instance when one is to blame.
	StageCacheToClient = "cache_to_client"
	// StageClient: inside the client, from its wire to its store and
	// handlers (the informer's queue, wire-to-store lag, reconcile read
	// delay).
	StageClient = "client"
)

// Stages lists the stages in delivery order.
func Stages() []string { return []string{StageEtcdToCache, StageCacheToClient, StageClient} }

// Labels of the stage recording rules, beside the cluster label and
// resource.
const (
	LabelStage = "stage"
	// LabelSignal names the measurement a stage's delay comes from (the
	// Signal* values).
	LabelSignal = "signal"
	// LabelInstance is the API server's scrape target, as the API servers'
	// scrape job labels it.
	LabelInstance = "instance"
	// labelJob selects the API servers' scrape job (Spec.APIServerJob).
	labelJob = "job"
)

// Values of LabelSignal: what measured a stage's delay, or (on
// RuleDeliveryDelay) the client's delay end to end.
const (
	SignalWatchCacheRV          = "watch_cache_rv"           // etcd_to_cache: the cache's RV against the head
	SignalDispatchP99           = "dispatch_p99"             // cache_to_client: 1.37's cache_to_watcher dispatch latency
	SignalTerminatedWatchers    = "terminated_watchers"      // cache_to_client: the remainder, while this API server closes slow watchers
	SignalRemainder             = "remainder"                // cache_to_client: the client's delay that no other stage explains
	SignalQueueOldest           = "queue_oldest"             // client: the oldest delta waiting for the store
	SignalStoreLagP99           = "store_lag_p99"            // client: wire-to-store lag
	SignalReconcileReadDelayP99 = "reconcile_read_delay_p99" // client: cache update to reconcile read
	SignalStaleness             = "staleness"                // end to end: staleness above the freshness proof period
	SignalCanaryP99             = "canary_p99"               // end to end: canary write to delivery
	SignalEventDeliveryP99      = "event_delivery_p99"       // end to end: commit to delivery
	SignalWatchSilence          = "watch_silence"            // end to end: the watch's silence past its bookmark period
)

// Recording rules of the stage group, in the order they are evaluated.
// Each carries the cluster label and resource.
const (
	// RuleWatchCacheBehind is how many seconds each API server's watch
	// cache (label instance) trails the head of the resource's RV space:
	// the revisions between them over the space's write rate, corrected
	// for the different times the two were sampled.
	RuleWatchCacheBehind = "rvsync_stage:watch_cache_behind:seconds"
	// RuleDeliveryDelay is the client's delay end to end, by LabelSignal:
	// staleness above its proof period, canary and event delivery p99,
	// and the watch's silence past its bookmark period (what is due
	// after a period and has not come: an idle resource's only sign of a
	// stalled path, with no write to time and no staleness known).
	RuleDeliveryDelay = "rvsync_stage:delivery_delay:seconds"
	// RuleStageDelay is each stage's delay in seconds, by LabelStage,
	// LabelSignal and (for the server's stages) LabelInstance.
	RuleStageDelay = "rvsync_stage:delay:seconds"
	// RuleWorstStage is the one RuleStageDelay series per resource with the
	// largest delay, from StageFloorSeconds on, while the API servers'
	// series of the resource exist: where the delay is.
	RuleWorstStage = "rvsync_stage:delay:worst"
)

// StageRules lists the stage group's recording-rule names.
func StageRules() []string {
	return []string{RuleWatchCacheBehind, RuleDeliveryDelay, RuleStageDelay, RuleWorstStage}
}

// DefaultAPIServerJob is the job label kube-prometheus-stack gives the API
// servers' scrape (its kubeApiServer ServiceMonitor).
const DefaultAPIServerJob = "apiserver"

// The API server's own families the stage rules read. All three are ALPHA
// on 1.34 and 1.37 (docs/apiserver-metrics.md): a server that renames one
// leaves its stage out, not wrong.
const (
	// APIServerWatchCacheRV is the watch cache's resource version per
	// group and resource; its presence is what turns the stages on.
	APIServerWatchCacheRV = "apiserver_watch_cache_resource_version"
	// APIServerTerminatedWatchers counts watchers closed for not taking
	// events; no series until the first.
	APIServerTerminatedWatchers = "apiserver_terminated_watchers_total"
	// APIServerDispatchDuration is 1.37's per-event dispatch latency by
	// stage (its label `stage`, apiServerDispatchStage read here).
	APIServerDispatchDuration = "apiserver_watch_events_dispatch_duration_seconds"
	apiServerDispatchStage    = "cache_to_watcher"
)

// APIServerSeries lists the series names of the API servers the stage
// rules read, for tests that check every name a rule reads.
func APIServerSeries() []string {
	return []string{APIServerWatchCacheRV, APIServerTerminatedWatchers, APIServerDispatchDuration + "_bucket"}
}

// StageFloorSeconds: a stage with less delay is not named. An undisturbed
// event reaches an informer in milliseconds; a stage named for less than
// a second would point on-call at noise.
const StageFloorSeconds = 1

// StageRange is the range of the rates and percentiles of the stage rules.
const StageRange = "5m"

// stageQuantile is the percentile the stage rules take of latency
// histograms.
const stageQuantile = 0.99

// MaxWatchCacheUpdatePause is the longest a healthy, quiet watch cache
// waits for its next resource version: etcd's default progress-notify
// interval (10 minutes). A quiet resource's cache moves only at etcd's
// progress notifications, so its RV legitimately trails the head by up to
// that long; the etcd_to_cache stage allows each cache its own usual
// pause, at most this.
const MaxWatchCacheUpdatePause = 10 * time.Minute

// StageRecord is one recording rule of the stage group.
type StageRecord struct {
	Record string
	Labels map[string]string
	Expr   string
}

// StageRecords returns the stage group's recording rules, in evaluation
// order (each may read the records above it from the same evaluation):
//
//  1. RuleWatchCacheBehind per API server;
//  2. RuleDeliveryDelay, the client's delay end to end;
//  3. RuleStageDelay of etcd_to_cache (the cache's trail, once its RV
//     stands still beyond its usual pause between updates), of
//     cache_to_client from 1.37's dispatch p99, and of client from the
//     exporter's own queue, wire-to-store lag and reconcile read delay;
//  4. RuleStageDelay of cache_to_client as the remainder: the end-to-end
//     delay less the worst etcd_to_cache and client delays, named after
//     the API server that terminated slow watchers of the resource when
//     one did;
//  5. RuleWorstStage: the largest stage delay from StageFloorSeconds on,
//     while the resource's watch-cache series exist (otherwise nothing,
//     and the pages keep their text).
func (s Spec) StageRecords() []StageRecord {
	rec := func(record, stage, signal, expr string) StageRecord {
		labels := map[string]string{LabelSignal: signal}
		if stage != "" {
			labels[LabelStage] = stage
		}
		return StageRecord{Record: record, Labels: labels, Expr: expr}
	}
	staleness, _ := SLIOf(CacheStaleness)
	remainder := s.remainder()
	terminated := fmt.Sprintf("max %s (%s) > 0", s.By(LabelInstance),
		apiServerResource(fmt.Sprintf("increase(%s[%s])", s.apiServer(APIServerTerminatedWatchers), StageRange)))
	dispatch := fmt.Sprintf("histogram_quantile(%s, sum %s (%s)) >= 0", promql.Num(stageQuantile), s.By(LabelInstance, "le"),
		apiServerResource(fmt.Sprintf("rate(%s[%s])", s.apiServer(APIServerDispatchDuration+"_bucket", promql.Eq(LabelStage, apiServerDispatchStage)), StageRange)))
	return []StageRecord{
		{Record: RuleWatchCacheBehind, Expr: s.watchCacheBehind()},
		rec(RuleDeliveryDelay, "", SignalStaleness, fmt.Sprintf("clamp_min(%s, 0)", s.sliceSignal(staleness))),
		rec(RuleDeliveryDelay, "", SignalCanaryP99, s.percentile(catalog.CanaryDeliveryLatency)),
		rec(RuleDeliveryDelay, "", SignalEventDeliveryP99, s.percentile(catalog.EventDeliveryLag)),
		rec(RuleDeliveryDelay, "", SignalWatchSilence, fmt.Sprintf("max %s (%s) - max %s (%s) > 0",
			s.By(), s.Series(catalog.WatchSilence.Name), s.By(), s.Series(catalog.WatchBookmarkPeriod.Name))),
		rec(RuleStageDelay, StageEtcdToCache, SignalWatchCacheRV, s.etcdToCache()),
		rec(RuleStageDelay, StageCacheToClient, SignalDispatchP99, dispatch),
		rec(RuleStageDelay, StageClient, SignalQueueOldest, fmt.Sprintf("max %s (%s)", s.By(), s.Series(catalog.StoreQueueOldest.Name))),
		rec(RuleStageDelay, StageClient, SignalStoreLagP99, s.percentile(catalog.StoreLag)),
		rec(RuleStageDelay, StageClient, SignalReconcileReadDelayP99, s.percentile(catalog.ReconcileReadDelay)),
		rec(RuleStageDelay, StageCacheToClient, SignalTerminatedWatchers, fmt.Sprintf("%s + on (%s) group_left (%s) (0 * topk %s (1, %s))", remainder, s.on(), LabelInstance, s.By(), terminated)),
		rec(RuleStageDelay, StageCacheToClient, SignalRemainder, fmt.Sprintf("%s unless on (%s) (%s)", remainder, s.on(), terminated)),
		{Record: RuleWorstStage, Expr: fmt.Sprintf("topk %s (1, %s >= %s) and on (%s) group %s (%s)",
			s.By(), RuleStageDelay, promql.Num(StageFloorSeconds), s.on(), s.By(), apiServerResource(s.apiServer(APIServerWatchCacheRV)))},
	}
}

// watchCacheBehind is RuleWatchCacheBehind's expression: at the time t_c
// the API server's cache RV C was scraped, the head H read at probe time
// t_p had moved on to about H + r (t_c - t_p) at the space's write rate r,
// so the cache trails it by (H - C) / r + (t_c - t_p) seconds. No sample
// while the space writes nothing (no rate to convert revisions).
func (s Spec) watchCacheBehind() string {
	head := fmt.Sprintf("max %s (%s)", s.By(), s.Series(catalog.HeadResourceVersion.Name))
	rate := fmt.Sprintf("max %s (deriv(%s[%s]))", s.By(), s.Series(catalog.HeadResourceVersion.Name), StageRange)
	age := s.Series(catalog.HeadAge.Name)
	probed := fmt.Sprintf("max %s (timestamp(%s) - %s)", s.By(), age, age)
	rv := s.apiServer(APIServerWatchCacheRV)
	cache := fmt.Sprintf("max %s (%s)", s.By(LabelInstance), apiServerResource(rv))
	scraped := fmt.Sprintf("max %s (%s)", s.By(LabelInstance), apiServerResource("timestamp("+rv+")"))
	return fmt.Sprintf("clamp_min((%s - on (%s) group_right () %s) / on (%s) group_left () (%s > 0) + (%s - on (%s) group_left () %s), 0)",
		head, s.on(), cache, s.on(), rate, scraped, s.on(), probed)
}

// StallScrapes: a watch cache that usually moves at every scrape of the
// API servers is named behind etcd once its trail exceeds this many
// scrape intervals (and its usual pause); a quieter cache once its trail
// exceeds twice its usual pause, or that pause and Spec.SliceWindow.
// A busy cache's RV takes a new value at about every scrape, so four
// intervals without one, with the head moving on, is no jitter of the
// scrape's timing.
const StallScrapes = 4

// etcdToCache is RuleStageDelay's expression of etcd_to_cache: each API
// server's watch cache's trail (RuleWatchCacheBehind) where it is a fault,
// 0 elsewhere. It is one as soon as it is evident, measured at this
// evaluation, not averaged over a window (#42: the first page, a minute
// into a stall, named no stage while the trail had to last a whole
// slice window):
//
//   - the cache's RV stands still: the same at its last two scrapes (a
//     cache that moved is not stalled, whatever its trail reads);
//   - its trail exceeds its usual pause between updates (watchCachePause)
//     by a margin: that pause again (a quiet cache that moves at etcd's
//     progress notifications has missed its next one by as long as it
//     waits for one), at least StallScrapes of its scrape intervals, at
//     most Spec.SliceWindow (the margin of the rule before, which took the
//     least trail over that window).
//
// The trail is taken rising no faster than time, at most its least over
// the slice window plus that window: a cache cannot fall further behind
// than the seconds that pass, so a trail that jumps at one evaluation (the
// head probed just after a burst of writes, against the 5-minute rate)
// is not a stall; a real one reads its full trail.
func (s Spec) etcdToCache() string {
	on := s.on(LabelInstance)
	window := promql.Num(mustDuration(s.SliceWindow).Seconds())
	rise := fmt.Sprintf("min_over_time(%s[%s]) + %s", RuleWatchCacheBehind, s.SliceWindow, window)
	trail := fmt.Sprintf("(%s <= on (%s) (%s) or on (%s) %s)", RuleWatchCacheBehind, on, rise, on, rise)
	rv := s.apiServer(APIServerWatchCacheRV)
	stageRange := promql.Num(mustDuration(StageRange).Seconds())
	scrapes := fmt.Sprintf("%s * max %s (%s)", promql.Num(StallScrapes), s.By(LabelInstance),
		apiServerResource(fmt.Sprintf("%s / (count_over_time(%s[%s]) - 1)", stageRange, rv, StageRange)))
	pause := s.watchCachePause()
	margin := fmt.Sprintf("clamp_max(%s >= on (%s) (%s) or on (%s) %s, %s)", pause, on, scrapes, on, scrapes, window)
	still := fmt.Sprintf("max %s (%s) == 0", s.By(LabelInstance), apiServerResource(fmt.Sprintf("idelta(%s[%s])", rv, StageRange)))
	return fmt.Sprintf("(%s > on (%s) (%s + on (%s) %s) and on (%s) (%s)) or on (%s) 0 * %s",
		trail, on, pause, on, margin, on, still, on, RuleWatchCacheBehind)
}

// watchCachePause is each API server cache's usual pause between updates
// beyond the scrape interval, at most MaxWatchCacheUpdatePause: over
// AllowanceMemory, the time per change of its RV less the time per
// scrape (the memory over its samples' intervals), in seconds. A
// busy cache changes at every scrape (no allowance); a quiet one at
// etcd's progress notifications. While the memory is not yet full the
// allowance comes out larger: a stage is then named later, not wrongly.
func (s Spec) watchCachePause() string {
	rv := s.apiServer(APIServerWatchCacheRV)
	memory := promql.Num(mustDuration(AllowanceMemory).Seconds())
	pause := fmt.Sprintf("%s / changes(%s[%s]) - %s / (count_over_time(%s[%s]) - 1)", memory, rv, AllowanceMemory, memory, rv, AllowanceMemory)
	return fmt.Sprintf("clamp_max(clamp_min(max %s (%s), 0), %s)", s.By(LabelInstance), apiServerResource(pause), promql.Num(MaxWatchCacheUpdatePause.Seconds()))
}

// remainder is the client's end-to-end delay that neither the worst
// watch cache nor the client's own stage explains: what happened between
// the cache and the client's wire. None while a watch cache of the
// resource was named behind etcd within StageRange: the end-to-end
// signals (5-minute percentiles, a staleness that shows only once a
// stalled server answers reads again) still hold that stall after the
// cache caught up, and would blame the stretch between cache and client
// for it (TestHA's server cut off etcd: 53 notifications after the
// release named cache_to_client). None either where no head is known
// (an embedded monitor whose Start never runs, or its head probe failing):
// nothing then measures a watch cache against etcd, and a cache standing
// still would pass for the stretch between cache and client (simulation
// page seed 3200561: a stuck cache's pages named cache_to_client).
func (s Spec) remainder() string {
	delivery := fmt.Sprintf("max %s (%s)", s.By(), RuleDeliveryDelay)
	stage := func(name string) string {
		return fmt.Sprintf("(max %s (%s) or 0 * %s)", s.By(), promql.Selector(RuleStageDelay, promql.Eq(LabelStage, name)), delivery)
	}
	lately := fmt.Sprintf("max %s (max_over_time(%s[%s])) >= %s", s.By(), promql.Selector(RuleStageDelay, promql.Eq(LabelStage, StageEtcdToCache)), StageRange, promql.Num(StageFloorSeconds))
	head := fmt.Sprintf("group %s (%s)", s.By(), s.Series(catalog.HeadResourceVersion.Name))
	return fmt.Sprintf("((clamp_min(%s - %s - %s, 0) unless on (%s) (%s)) and on (%s) %s)", delivery, stage(StageEtcdToCache), stage(StageClient), s.on(), lately, s.on(), head)
}

// percentile is the stage rules' percentile of a histogram family of the
// exporter by cluster and resource, from its classic buckets or its
// native histogram; no sample where nothing was observed.
func (s Spec) percentile(m catalog.Metric) string {
	return fmt.Sprintf("(%s) >= 0", s.histogramQuantile(promql.Num(stageQuantile), Series{Name: m.Name}, StageRange))
}

// apiServer selects a family of the API servers' scrape job.
func (s Spec) apiServer(name string, matchers ...string) string {
	return promql.Selector(name, append([]string{promql.Eq(labelJob, s.APIServerJob)}, matchers...)...)
}

// on is the matching of the stage rules' joins: the cluster label,
// resource and extra.
func (s Spec) on(extra ...string) string {
	return strings.Join(append([]string{s.ClusterLabel, catalog.LabelResource}, extra...), ", ")
}

// apiServerResource relabels an API server's series the way the exporter
// names resources: its `resource` and `group` labels (deployments, apps)
// become one `resource` (deployments.apps; configmaps for the core group,
// whose group is empty).
func apiServerResource(expr string) string {
	r := catalog.LabelResource
	return fmt.Sprintf(`label_replace(label_join(%s, %q, ".", %q, "group"), %q, "$1", %q, "(.*)\\.")`, expr, r, r, r, r)
}
