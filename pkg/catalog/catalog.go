package catalog

import "slices"

// Namespace prefixes every metric family of rvsync-slo.
const Namespace = "rvsync"

// Type is the Prometheus metric type of a family.
type Type string

// Metric types used by the catalog.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Label names. The label `resource` carries `plural.group` (core resources as
// `plural`); no label ever carries a resource version or an object name, so
// cardinality is bounded by the number of watched resources.
const (
	LabelResource  = "resource"
	LabelKind      = "kind"
	LabelResult    = "result"
	LabelReason    = "reason"
	LabelState     = "state"
	LabelSpace     = "space"
	LabelVersion   = "version"
	LabelRevision  = "revision"
	LabelGoVersion = "goversion"
	// LabelController is added to every series by processes that embed
	// pkg/probe with Options.Controller set, to tell them apart.
	LabelController = "controller"
)

// ResourceValue returns the value of the `resource` label of a resource:
// `plural.group`, or `plural` for the core group.
func ResourceValue(group, plural string) string {
	if group == "" {
		return plural
	}
	return plural + "." + group
}

// Values of the `state` label of ResourceState: what limits the resource's
// signals.
const (
	StateOK          = "ok"            // lag and staleness are measured
	StateHeadUnknown = "head_unknown"  // the RV space's head probe has not answered lately (lag unknown; staleness too, but on a canary's resource while its writes answer), or a quiet resource's own freshness reads fail (staleness unknown); either way, a store that lacks a change answered or delivered elsewhere over a minute ago reports staleness from its last proof
	StateOpaqueRV    = "opaque_rv"     // resource versions are not integers: no RV math
	StateAheadOfHead = "ahead_of_head" // the informer's RV is ahead of its space's head: another history (etcd restored, API server not) or another etcd
	StateUnserved    = "unserved"      // the API server does not serve the resource (404: a CRD deleted) or forbids listing it: nothing is watched, the list errors say why
	StateNoBookmarks = "no_bookmarks"  // the watch's server sends no bookmarks (its watch cache off, an extension API server not built on the cacher, a proxy cutting streams): a quiet cache cannot be proven fresh, so staleness is absent; lag and silence are measured
)

// States lists the values of the `state` label.
func States() []string {
	return []string{StateOK, StateHeadUnknown, StateOpaqueRV, StateAheadOfHead, StateUnserved, StateNoBookmarks}
}

// Values of the `kind` label of ListDuration.
const (
	KindList      = "list"      // a classic List call (each page)
	KindWatchList = "watchlist" // a streaming list: Watch with sendInitialEvents=true up to the initial-events-end bookmark
	KindProbe     = "probe"     // a consistent metadata List with limit=1: a head probe or a freshness read
)

// Values of the `result` label.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	// ResultNotFound marks a List the API server answered 404: it does not
	// serve the resource (a deleted CRD, an API group gone). An answer,
	// not a failure: the List-latency SLI counts it neither good nor bad.
	ResultNotFound = "not_found"
	// ResultRateLimited marks a sampled read of StaleReadChecks that was not
	// checked: the live reads' token bucket was empty.
	ResultRateLimited = "rate_limited"
)

// Values of the `reason` label of StaleReads: how a sampled reconcile's
// cache read differed from a consistent live read made just before it.
const (
	StaleRVBehind    = "rv_behind"    // same object, the cache's resource version below the live one
	StaleReplaced    = "replaced"     // another object of the same name (UID) is live: deleted and re-created
	StaleDeletedLive = "deleted_live" // the cache holds an object that is deleted live
	StaleMissing     = "missing"      // the cache lacks an object that exists live (e.g. just created)
)

// StaleReasons lists the values of the `reason` label of StaleReads.
func StaleReasons() []string {
	return []string{StaleRVBehind, StaleReplaced, StaleDeletedLive, StaleMissing}
}

// Values of the `reason` label of Relists.
const (
	RelistInitial = "initial" // the first list of an informer
	RelistExpired = "expired" // the previous watch ended with 410 Gone / Expired
	RelistError   = "error"   // any other reason to list again
)

// Values of the `reason` label of ListErrors, WatchErrors and
// HeadProbeErrors. Reasons are
// derived from the API status reason, or from the transport error class.
const (
	ReasonExpired      = "expired"      // 410 Gone / Expired
	ReasonForbidden    = "forbidden"    // 403
	ReasonUnauthorized = "unauthorized" // 401
	ReasonNotFound     = "not_found"    // 404: resource removed (CRD deleted)
	ReasonTimeout      = "timeout"      // client or server timeout
	ReasonUnavailable  = "unavailable"  // connection refused/reset, 5xx, 429
	ReasonDecode       = "decode"       // a response that could not be decoded
	ReasonOpaqueRV     = "opaque_rv"    // a resource version that is not an integer
	ReasonOther        = "other"
)

// Metric is one family: the only place its name, help, type, labels and
// buckets are written down.
type Metric struct {
	Name    string
	Help    string
	Type    Type
	Labels  []string
	Buckets []float64 // histograms only
	Unit    string    // for documentation and dashboards: "revisions", "seconds", "objects", "" (count/ratio)
}

// Bucket layouts. Each contains the thresholds of the SLOs it serves (package
// slo checks it), so that `le` selects count good events without
// interpolation.
var (
	// LatencyBuckets serve List and probe durations: 5 ms … 60 s, with 1.5 s.
	LatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 10, 30, 60}
	// DeliveryBuckets serve watch and event delivery lags: 5 ms … 10 min, with 30 s.
	DeliveryBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600}
	// ConvergenceBuckets serve generation convergence: 100 ms … 1 h.
	ConvergenceBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	// StoreLagBuckets serve the wire-to-store lag: 100 µs (an idle
	// informer's hand-over) … 5 min.
	StoreLagBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300}
)

// The metric families.
var (
	HeadResourceVersion = Metric{
		Name:   "rvsync_head_resource_version",
		Help:   "Latest resource version returned by the head probe (a consistent List limit=1) of the resource's RV space. Absent when resource versions are not integers.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "revisions",
	}
	InformerResourceVersion = Metric{
		Name:   "rvsync_informer_resource_version",
		Help:   "Highest resource version the resource's informer has observed (events, bookmarks, list ends), monotonic between regressions.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "revisions",
	}
	ResourceVersionLag = Metric{
		Name:   "rvsync_resource_version_lag",
		Help:   "Revisions the resource's informer cache is behind, as its own deliveries show: while its watch is live, how far behind the head its latest events were when delivered (0 when it is idle, whatever other resources write); once the watch has been silent for two bookmark periods, or a minute short of a write it should have delivered (a canary write, or a change another informer of the resource delivered of an object it holds), head minus informer resource version (everything since may be missing). With several informers, the worst of them. Absent when the state is not ok, or when the informer's deliveries cannot tell a lagging cache from a quiet one (a list below the head of an etcd not yet confirmed as its space's; a silence of a session that nothing but its own writes moves).",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "revisions",
	}
	CacheStaleness = Metric{
		Name:   "rvsync_cache_staleness_seconds",
		Help:   "Seconds since the informer cache provably held everything committed: since the request of the latest head probe whose head its resource version covered (or a consistent list, or a delivered canary). A quiet resource saws up to its freshness proof period; a stalled watch grows without bound. With several informers, the worst of them. Absent while the head is unknown, or while one of its synced informers' staleness is.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	FreshnessProofPeriod = Metric{
		Name:   "rvsync_freshness_proof_period_seconds",
		Help:   "The highest staleness the resource's healthy, quiet cache reached before a watch bookmark proved it fresh again, over the last 30 minutes: the height of its staleness sawtooth, set by the bookmark period and how often its API server's watch cache catches up with etcd. 0 when only events proved freshness. The staleness SLI judges staleness above it.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	WatchSilence = Metric{
		Name:   "rvsync_watch_silence_seconds",
		Help:   "Seconds since the informer's watch last delivered anything: an event, a bookmark or the end of a list. A live watch delivers a bookmark every bookmark period; a stalled one falls silent. Absent until the informer synced, and while the resource is not served (state unserved: a List, or every read since the watch last spoke, answered 404). With several informers of the resource, the one whose silence is the most bookmark periods of its own; rvsync_watch_bookmark_period_seconds is that informer's.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	WatchBookmarkPeriod = Metric{
		Name:   "rvsync_watch_bookmark_period_seconds",
		Help:   "The bookmark cadence of the resource's informer (with several, of the one whose rvsync_watch_silence_seconds is reported): the median of the latest intervals between its watch bookmarks, never below kube-apiserver's 60 (shorter intervals are its extra bookmarks after a watch-list and before a watch timeout); 60 until measured. A watch that has had no bookmark yet (its server may send none) reads the longest of its recent sessions, and the timeout the current one asked for until that timeout has passed: a session open past it has a stalled path. Without freshness reads on the informer's own connection, while a watch session that has had no bookmark yet is open within its timeout, that session's length: the API server sends no bookmark until its watch cache moves past the watch's start, which for a quiet resource only etcd's progress notifications then do.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	HeadAge = Metric{
		Name:   "rvsync_head_age_seconds",
		Help:   "Seconds since the latest head sample of the resource's RV space was requested. Above a few probe intervals, lag and staleness are unknown (state head_unknown); on a canary's resource, staleness stays known while the canary's writes answer.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	ResourceState = Metric{
		Name:   "rvsync_resource_state",
		Help:   "1 for the state that limits the resource's signals, 0 for the others: ok; head_unknown (the head probe has not answered lately: lag unknown, and staleness too but on a canary's resource while its writes answer; or the freshness reads a quiet resource's staleness rests on fail while its watch streams: staleness unknown; either way, a store that lacks a change answered or delivered elsewhere over a minute ago reports staleness from its last proof); opaque_rv (resource versions are not integers); ahead_of_head (the informer's resource version is ahead of its RV space's head: etcd restored while the API server kept its watch cache, or a resource of another etcd).",
		Type:   Gauge,
		Labels: []string{LabelResource, LabelState},
	}
	ResourceInfo = Metric{
		Name:   "rvsync_resource_info",
		Help:   "Information about a watched resource; value 1. space is its RV space (the etcd it lives in).",
		Type:   Gauge,
		Labels: []string{LabelResource, LabelSpace},
	}
	EventDeliveryLag = Metric{
		Name:    "rvsync_event_delivery_lag_seconds",
		Help:    "Lower bound of the time from commit to delivery of each watch event, from the first head probe that saw the event's RV (resolution: the probe interval).",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: DeliveryBuckets,
		Unit:    "seconds",
	}
	EventDeliveryUnbounded = Metric{
		Name:   "rvsync_event_delivery_lag_unbounded_total",
		Help:   "Watch events whose commit time no head probe bounded because the probes were failing: their delivery lag is unknown and they are left out of rvsync_event_delivery_lag_seconds.",
		Type:   Counter,
		Labels: []string{LabelResource},
	}
	ListDuration = Metric{
		Name:    "rvsync_list_duration_seconds",
		Help:    "Duration of each List page the informer requests, of its streaming watch-list syncs (one Watch up to the initial-events-end bookmark), and of head probes and freshness reads (kind probe), by result: success, error, not_found (the API server does not serve the resource: an answer, not a failure).",
		Type:    Histogram,
		Labels:  []string{LabelResource, LabelKind, LabelResult},
		Buckets: LatencyBuckets,
		Unit:    "seconds",
	}
	ListErrors = Metric{
		Name:   "rvsync_list_errors_total",
		Help:   "Lists and watch-lists of the informer that failed, by reason (e.g. forbidden, expired, unavailable).",
		Type:   Counter,
		Labels: []string{LabelResource, LabelReason},
	}
	Relists = Metric{
		Name:   "rvsync_relists_total",
		Help:   "Full lists (List or watch-list) made by the informer, by reason: initial, expired (410 Gone), error.",
		Type:   Counter,
		Labels: []string{LabelResource, LabelReason},
	}
	WatchStarts = Metric{
		Name:   "rvsync_watch_starts_total",
		Help:   "Watches started by the informer (each (re)connection of its watch).",
		Type:   Counter,
		Labels: []string{LabelResource},
	}
	WatchErrors = Metric{
		Name:   "rvsync_watch_errors_total",
		Help:   "Errors that refused or ended a watch of the informer (a failed watch call or an error event in the stream), by reason. List failures count in rvsync_list_errors_total.",
		Type:   Counter,
		Labels: []string{LabelResource, LabelReason},
	}
	ResourceVersionRegressions = Metric{
		Name:   "rvsync_resource_version_regressions_total",
		Help:   "Times the head or informer resource version went backwards (etcd restored from a backup). Lag math is reset, never corrupted.",
		Type:   Counter,
		Labels: []string{LabelResource},
	}
	InformerSynced = Metric{
		Name:   "rvsync_informer_synced",
		Help:   "1 when the resource's informer has completed its initial list, 0 otherwise.",
		Type:   Gauge,
		Labels: []string{LabelResource},
	}
	Objects = Metric{
		Name:   "rvsync_objects",
		Help:   "Objects held in the resource's informer cache.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "objects",
	}
	HeadProbeErrors = Metric{
		Name:   "rvsync_head_probe_errors_total",
		Help:   "Head probes and freshness reads (consistent Lists with limit=1) through this resource that failed, by reason (e.g. forbidden, timeout; opaque_rv for a head that is not an integer).",
		Type:   Counter,
		Labels: []string{LabelResource, LabelReason},
	}
	CanaryDeliveryLatency = Metric{
		Name:    "rvsync_canary_delivery_latency_seconds",
		Help:    "Exact time from a canary write to the delivery of its resource version by the exporter's own informer.",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: DeliveryBuckets,
		Unit:    "seconds",
	}
	CanaryWrites = Metric{
		Name:   "rvsync_canary_writes_total",
		Help:   "Canary heartbeat writes by result (success, error; the error is logged with its reason).",
		Type:   Counter,
		Labels: []string{LabelResource, LabelResult},
	}
	CanaryLost = Metric{
		Name:   "rvsync_canary_lost_total",
		Help:   "Canary writes not delivered by the informer within the canary deadline.",
		Type:   Counter,
		Labels: []string{LabelResource},
	}
	CanaryLastDelivered = Metric{
		Name:   "rvsync_canary_last_delivered_timestamp_seconds",
		Help:   "Unix time of the latest canary delivery.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	UnconvergedObjects = Metric{
		Name:   "rvsync_unconverged_objects",
		Help:   "Objects whose status.observedGeneration is below metadata.generation.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "objects",
	}
	UnobservableObjects = Metric{
		Name:   "rvsync_unobservable_objects",
		Help:   "Objects of a convergence-tracked resource none of whose objects reports an observed generation at the configured path: left out of the convergence signals, since their controller never says what it acted on. Once one object reports, the others count as waiting for their controller.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "objects",
	}
	OldestUnconverged = Metric{
		Name:   "rvsync_oldest_unconverged_seconds",
		Help:   "Age of the oldest pending generation: seconds since the exporter first saw a generation not yet observed by the object's controller. 0 when all converged.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	GenerationConvergence = Metric{
		Name:    "rvsync_generation_convergence_seconds",
		Help:    "Time from first seeing generation G of an object to seeing status.observedGeneration >= G.",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: ConvergenceBuckets,
		Unit:    "seconds",
	}
	StaleReadChecks = Metric{
		Name:   "rvsync_stale_read_checks_total",
		Help:   "Informer-cache reads of sampled reconciles (the stale-read check of pkg/probe, off unless an operator enables it), by result: success (compared with a consistent live read made just before), error (the live read failed), rate_limited (not checked: the live reads' token bucket was empty).",
		Type:   Counter,
		Labels: []string{LabelResource, LabelResult},
	}
	StaleReads = Metric{
		Name:   "rvsync_stale_reads_total",
		Help:   "Checked informer-cache reads that were stale against a consistent live read made just before them, by reason: rv_behind (the cache's resource version below the live one), replaced (another UID is live), deleted_live (deleted live, still cached), missing (live, not yet cached).",
		Type:   Counter,
		Labels: []string{LabelResource, LabelReason},
	}
	StaleReadBehind = Metric{
		Name:    "rvsync_stale_read_behind_seconds",
		Help:    "Lower bound of how far behind an rv_behind stale read was: from the commit of the live resource version, bounded by the answer of the first head probe that saw it (resolution: the probe interval; 0 when no probe saw it before the read), to the cache read. Observed only while the resource's RV space has a current head.",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: DeliveryBuckets,
		Unit:    "seconds",
	}
	ReconcileReadDelay = Metric{
		Name:    "rvsync_reconcile_read_delay_seconds",
		Help:    "Time from the informer's delivery of an object's version into the cache to a sampled reconcile's read of it, for reads of the object the reconcile was triggered for (reconcilers wrapped by the stale-read hook).",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: DeliveryBuckets,
		Unit:    "seconds",
	}
	TimelineDropped = Metric{
		Name:   "rvsync_head_timeline_dropped_samples_total",
		Help:   "Head samples dropped from a resource's bounded head timeline because it was full.",
		Type:   Counter,
		Labels: []string{LabelResource},
	}
	StoreQueueDepth = Metric{
		Name:   "rvsync_informer_queue_depth",
		Help:   "Deltas (watch events, bookmarks, list ends) the resource's informer received on the wire and has not yet applied to its store, for its worst informer: the backlog in the informer's queue (slow indexers, CPU starvation, a blocking processor). Its readers cannot see them yet; freshness and canary delivery count only what the store holds.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "deltas",
	}
	StoreQueueOldest = Metric{
		Name:   "rvsync_informer_queue_oldest_seconds",
		Help:   "Seconds the oldest delta counted in rvsync_informer_queue_depth has waited since it was received on the wire; 0 when none waits. Grows while a store stops applying, when no wire-to-store lag is observed.",
		Type:   Gauge,
		Labels: []string{LabelResource},
		Unit:   "seconds",
	}
	StoreLag = Metric{
		Name:    "rvsync_informer_store_lag_seconds",
		Help:    "Time from the receipt of each delta on the informer's watch to its store holding it (one observation per delta, or, while a deep queue is kept in batches of neighbouring deltas, per batch as its oldest delta saw it).",
		Type:    Histogram,
		Labels:  []string{LabelResource},
		Buckets: StoreLagBuckets,
		Unit:    "seconds",
	}
	BuildInfo = Metric{
		Name:   "rvsync_build_info",
		Help:   "Build information of the rvsync exporter; value 1.",
		Type:   Gauge,
		Labels: []string{LabelVersion, LabelRevision, LabelGoVersion},
	}
)

// All returns every metric family, in a stable order.
func All() []Metric {
	return []Metric{
		HeadResourceVersion, InformerResourceVersion, ResourceVersionLag, CacheStaleness,
		FreshnessProofPeriod, WatchSilence, WatchBookmarkPeriod, HeadAge, ResourceState, ResourceInfo,
		EventDeliveryLag, EventDeliveryUnbounded, ListDuration, Relists, WatchStarts, WatchErrors,
		ListErrors, ResourceVersionRegressions, InformerSynced, Objects, HeadProbeErrors,
		CanaryDeliveryLatency, CanaryWrites, CanaryLost, CanaryLastDelivered,
		UnconvergedObjects, UnobservableObjects, OldestUnconverged, GenerationConvergence,
		TimelineDropped, BuildInfo,
		StaleReadChecks, StaleReads, StaleReadBehind, ReconcileReadDelay,
		StoreQueueDepth, StoreQueueOldest, StoreLag,
	}
}

// SeriesNames returns the names of the series a family exposes: the family
// name, or for a histogram its _bucket, _sum and _count series and the
// family name (one native series, where Prometheus converts classic
// histograms to native ones with custom buckets).
func (m Metric) SeriesNames() []string {
	if m.Type == Histogram {
		return []string{m.Name + "_bucket", m.Name + "_sum", m.Name + "_count", m.Name}
	}
	return []string{m.Name}
}

// Lookup returns the family that exposes the series name (a family name or a
// histogram's _bucket/_sum/_count).
func Lookup(series string) (Metric, bool) {
	for _, m := range All() {
		if slices.Contains(m.SeriesNames(), series) {
			return m, true
		}
	}
	return Metric{}, false
}
