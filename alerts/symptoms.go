package alerts

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Names of the symptom alerts. The burn-rate alerts are named
// Rvsync<SLO>BudgetBurn, see BurnAlertNames.
const (
	AlertExporterDown              = "RvsyncExporterDown"
	AlertExporterAbsent            = "RvsyncExporterAbsent"
	AlertInformerNotSynced         = "RvsyncInformerNotSynced"
	AlertWatchStalled              = "RvsyncWatchStalled"
	AlertCanaryLost                = "RvsyncCanaryLost"
	AlertResourceVersionRegression = "RvsyncResourceVersionRegression"
	AlertRelistStorm               = "RvsyncRelistStorm"
	AlertListErrors                = "RvsyncListErrors"
	AlertHeadProbeErrors           = "RvsyncHeadProbeErrors"
	AlertCanaryWriteErrors         = "RvsyncCanaryWriteErrors"
	AlertInformerAheadOfHead       = "RvsyncInformerAheadOfHead"
	AlertHeadUnknown               = "RvsyncHeadUnknown"
	AlertInformerBackpressure      = "RvsyncInformerBackpressure"
)

// BurnAlertNames returns the burn-rate alert name of each SLO in
// slo.Names(), in that order.
func BurnAlertNames() []string {
	var names []string
	for _, n := range slo.Names() {
		names = append(names, burnAlertName(n))
	}
	return names
}

// AlertNames returns every alert name the generator may produce.
func AlertNames() []string {
	return append(BurnAlertNames(),
		AlertExporterDown, AlertExporterAbsent, AlertInformerNotSynced, AlertWatchStalled,
		AlertCanaryLost, AlertResourceVersionRegression, AlertRelistStorm,
		AlertListErrors, AlertHeadProbeErrors, AlertCanaryWriteErrors, AlertInformerAheadOfHead, AlertHeadUnknown,
		AlertInformerBackpressure)
}

// symptomAlerts catch what burn rates see late or not at all: an exporter
// that is not scraped (no SLI data at all), an informer that never syncs, a
// stalled watch, lost canaries, an etcd restore, relist storms and probe
// errors. Each tolerates a short blip through a range or a `for`.
func (s generator) symptomAlerts() []rulefmt.Rule {
	sym := s.Symptoms
	res := s.resourceRef()
	defs := []alertDef{{
		name:        AlertExporterDown,
		exporter:    true,
		expr:        fmt.Sprintf("up{%s} == 0", s.UpSelector),
		severity:    slo.SeverityTicket,
		forDuration: "5m",
		summary:     "The rvsync exporter cannot be scraped.",
		description: fmt.Sprintf("Prometheus failed to scrape rvsync exporter {{ $labels.instance }} (job {{ $labels.job }}, %s {{ $labels.%s }}) for 5 minutes: the SLOs of its resources get no data and cannot alert.", s.ClusterLabel, s.ClusterLabel),
	}, {
		name:        AlertExporterAbsent,
		exporter:    true,
		expr:        fmt.Sprintf("absent(up{%s})", s.UpSelector),
		severity:    slo.SeverityTicket,
		forDuration: "15m",
		summary:     "No rvsync exporter target is known to Prometheus.",
		description: fmt.Sprintf("No target matches up{%s} for 15 minutes: the exporter is not deployed or not discovered, so no rvsync SLO can alert.", s.UpSelector),
	}, {
		name:        AlertInformerNotSynced,
		expr:        fmt.Sprintf("min %s (%s) == 0", s.By(), s.Series(catalog.InformerSynced.Name)),
		severity:    slo.SeverityTicket,
		forDuration: sym.NotSyncedFor,
		summary:     "An rvsync informer has not synced for " + sym.NotSyncedFor + ".",
		description: fmt.Sprintf("%s: the exporter's informer has not completed its initial list for %s (synced = {{ $value }}), so its cache and SLIs are empty.", res, sym.NotSyncedFor),
	}, {
		name: AlertWatchStalled,
		expr: fmt.Sprintf("max %s (%s) > max %s (clamp_min(3 * %s, %s))",
			s.By(), s.Series(catalog.WatchSilence.Name), s.By(), s.Series(catalog.WatchBookmarkPeriod.Name), promql.Num(sym.StalledAfterSeconds)),
		severity:    slo.SeverityPage,
		forDuration: sym.StalledFor,
		summary:     "An rvsync informer's watch is stalled.",
		description: fmt.Sprintf("%s: the informer's watch has delivered nothing, not even a bookmark, for {{ $value | humanizeDuration }} (more than three bookmark periods and %ss, for %s): its cache misses every change since. Whatever etcd's progress-notify interval, a live watch brings a bookmark every period.", res, promql.Num(sym.StalledAfterSeconds), sym.StalledFor),
	}, {
		name:        AlertCanaryLost,
		expr:        fmt.Sprintf("sum %s (increase(%s[5m])) > 0", s.By(), s.Series(catalog.CanaryLost.Name)),
		severity:    slo.SeverityTicket,
		forDuration: "10m",
		summary:     "rvsync canary writes keep getting lost.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} canary writes in the last 5 minutes were not delivered by the informer within the canary deadline, continuously for 10 minutes: the watch loses or withholds events.", res),
	}, {
		name:        AlertResourceVersionRegression,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.By(), s.Series(catalog.ResourceVersionRegressions.Name)),
		severity:    slo.SeverityTicket,
		summary:     "A resource version went backwards.",
		description: fmt.Sprintf("%s: the head or informer resource version went backwards {{ $value | humanize }} times in the last 10 minutes, as after an etcd restore from backup. Clients may hold objects newer than the store.", res),
	}, {
		name:        AlertRelistStorm,
		expr:        fmt.Sprintf("sum %s (increase(%s[1h])) > %s", s.By(), s.Series(catalog.Relists.Name, promql.Eq(catalog.LabelReason, catalog.RelistExpired)), promql.Num(sym.RelistsPerHour)),
		severity:    slo.SeverityTicket,
		forDuration: "15m",
		summary:     "An rvsync informer relists over and over after 410 Gone.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} full relists in the last hour because the watch's resource version expired (410 Gone), above %s per hour: each one lists the whole collection.", res, promql.Num(sym.RelistsPerHour)),
	}, {
		name:        AlertListErrors,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.By(catalog.LabelReason), s.Series(catalog.ListErrors.Name)),
		severity:    slo.SeverityTicket,
		forDuration: sym.ErrorsFor,
		summary:     "An rvsync informer's Lists keep failing.",
		description: fmt.Sprintf("%s: the informer's List or watch-list failed {{ $value | humanize }} times in the last 10 minutes with reason {{ $labels.reason }}, continuously for %s: its cache cannot (re)sync.", res, sym.ErrorsFor),
	}, {
		name:        AlertHeadProbeErrors,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.By(catalog.LabelReason), s.Series(catalog.HeadProbeErrors.Name)),
		severity:    slo.SeverityTicket,
		forDuration: sym.ErrorsFor,
		summary:     "rvsync head probes keep failing.",
		description: fmt.Sprintf("%s: the head probe through this resource failed {{ $value | humanize }} times in the last 10 minutes with reason {{ $labels.reason }}, continuously for %s, so RV lag and staleness cannot be measured.", res, sym.ErrorsFor),
	}, {
		name:        AlertCanaryWriteErrors,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.By(), s.Series(catalog.CanaryWrites.Name, promql.Eq(catalog.LabelResult, catalog.ResultError))),
		severity:    slo.SeverityTicket,
		forDuration: sym.ErrorsFor,
		summary:     "rvsync canary writes keep failing.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} canary writes failed in the last 10 minutes, continuously for %s (the exporter logs each reason), so the canary SLI has no data.", res, sym.ErrorsFor),
	}, {
		name: AlertInformerAheadOfHead,
		// over 2m: a restored history keeps resetting the informer's RV (each
		// write that lands below is a regression) until the stale cache's
		// next bookmark re-seeds it, so the state drops for a few seconds a
		// minute while the fault lasts
		expr:        fmt.Sprintf("max %s (max_over_time(%s[2m])) == 1", s.By(), s.Series(catalog.ResourceState.Name, promql.Eq(catalog.LabelState, catalog.StateAheadOfHead))),
		severity:    slo.SeverityPage,
		forDuration: "5m",
		summary:     "An rvsync informer holds resource versions ahead of its etcd's head.",
		description: fmt.Sprintf("%s: the informer's resource version is ahead of the head of its RV space for 5 minutes (state = {{ $value }}). Either etcd was restored from a backup while kube-apiserver kept its watch cache, so caches serve objects of a lost history, or the resource lives in another etcd than its RV space. Its staleness grows from the last proof.", res),
	}, {
		name:        AlertHeadUnknown,
		expr:        fmt.Sprintf("max %s (%s) == 1", s.By(), s.Series(catalog.ResourceState.Name, promql.Eq(catalog.LabelState, catalog.StateHeadUnknown))),
		severity:    slo.SeverityTicket,
		forDuration: "10m",
		summary:     "rvsync cannot read the head of a resource's etcd.",
		description: fmt.Sprintf("%s: no head probe of its RV space, or for a quiet resource its own freshness read, has answered for 10 minutes (state = {{ $value }}), so staleness (and, when the head probe fails, lag) is unknown, not zero: the API server or etcd is unavailable, the informers' connection hangs new requests, or the exporter may not list this resource (see RvsyncHeadProbeErrors).", res),
	}, {
		name:        AlertInformerBackpressure,
		expr:        fmt.Sprintf("max %s (%s) > %s", s.By(), s.Series(catalog.StoreQueueDepth.Name), promql.Num(sym.QueueDepthLimit)),
		severity:    slo.SeverityTicket,
		forDuration: sym.BackpressureFor,
		summary:     "An informer's store falls behind its watch.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} deltas received on the watch wait to be applied to the informer's store, above %s for %s: its controllers read a cache that lags the wire (see rvsync_informer_queue_oldest_seconds). A slow transform or indexer, CPU starvation, or a processing goroutine that blocks.", res, promql.Num(sym.QueueDepthLimit), sym.BackpressureFor),
	}}
	rules := make([]rulefmt.Rule, len(defs))
	for i, d := range defs {
		rules[i] = s.alert(d)
	}
	return rules
}
