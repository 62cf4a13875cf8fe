package alerts

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/rvsync-slo/rvsync-slo/exporter/catalog"
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
	AlertProbeErrors               = "RvsyncProbeErrors"
)

// BurnAlertNames returns the burn-rate alert name of each SLO in
// catalog.SLOs(), in that order.
func BurnAlertNames() []string {
	var names []string
	for _, slo := range catalog.SLOs() {
		names = append(names, burnAlertName(slo))
	}
	return names
}

// AlertNames returns every alert name the generator may produce.
func AlertNames() []string {
	return append(BurnAlertNames(),
		AlertExporterDown, AlertExporterAbsent, AlertInformerNotSynced, AlertWatchStalled,
		AlertCanaryLost, AlertResourceVersionRegression, AlertRelistStorm, AlertProbeErrors)
}

// symptomAlerts catch what burn rates see late or not at all: an exporter
// that is not scraped (no SLI data at all), an informer that never syncs, a
// stalled watch, lost canaries, an etcd restore, relist storms and probe
// errors. Each tolerates a short blip through a range or a `for`.
func (s Spec) symptomAlerts() []rulefmt.Rule {
	sym := s.Symptoms
	res := s.resourceRef()
	defs := []alertDef{{
		name:        AlertExporterDown,
		expr:        fmt.Sprintf("up{%s} == 0", s.UpSelector),
		severity:    SeverityTicket,
		forDuration: "5m",
		summary:     "The rvsync exporter cannot be scraped.",
		description: fmt.Sprintf("Prometheus failed to scrape rvsync exporter {{ $labels.instance }} (job {{ $labels.job }}, %s {{ $labels.%s }}) for 5 minutes: the SLOs of its resources get no data and cannot alert.", s.ClusterLabel, s.ClusterLabel),
	}, {
		name:        AlertExporterAbsent,
		expr:        fmt.Sprintf("absent(up{%s})", s.UpSelector),
		severity:    SeverityTicket,
		forDuration: "15m",
		summary:     "No rvsync exporter target is known to Prometheus.",
		description: fmt.Sprintf("No target matches up{%s} for 15 minutes: the exporter is not deployed or not discovered, so no rvsync SLO can alert.", s.UpSelector),
	}, {
		name:        AlertInformerNotSynced,
		expr:        fmt.Sprintf("min %s (%s) == 0", s.by(), s.series(catalog.InformerSynced.Name)),
		severity:    SeverityTicket,
		forDuration: sym.NotSyncedFor,
		summary:     "An rvsync informer has not synced for " + sym.NotSyncedFor + ".",
		description: fmt.Sprintf("%s: the exporter's informer has not completed its initial list for %s (synced = {{ $value }}), so its cache and SLIs are empty.", res, sym.NotSyncedFor),
	}, {
		name:        AlertWatchStalled,
		expr:        fmt.Sprintf("max %s (%s) > %s", s.by(), s.series(catalog.CacheStaleness.Name), num(sym.StalledAfterSeconds)),
		severity:    SeverityPage,
		forDuration: sym.StalledFor,
		summary:     "An rvsync informer's watch is stalled.",
		description: fmt.Sprintf("%s: the informer cache is {{ $value | humanizeDuration }} stale (above %ss, several bookmark periods, for %s): its watch delivers neither events nor bookmarks.", res, num(sym.StalledAfterSeconds), sym.StalledFor),
	}, {
		name:        AlertCanaryLost,
		expr:        fmt.Sprintf("sum %s (increase(%s[5m])) > 0", s.by(), s.series(catalog.CanaryLost.Name)),
		severity:    SeverityTicket,
		forDuration: "10m",
		summary:     "rvsync canary writes keep getting lost.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} canary writes in the last 5 minutes were not delivered by the informer within the canary deadline, continuously for 10 minutes: the watch loses or withholds events.", res),
	}, {
		name:        AlertResourceVersionRegression,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.by(), s.series(catalog.ResourceVersionRegressions.Name)),
		severity:    SeverityTicket,
		summary:     "A resource version went backwards.",
		description: fmt.Sprintf("%s: the head or informer resource version went backwards {{ $value | humanize }} times in the last 10 minutes, as after an etcd restore from backup. Clients may hold objects newer than the store.", res),
	}, {
		name:        AlertRelistStorm,
		expr:        fmt.Sprintf("sum %s (increase(%s[1h])) > %s", s.by(), s.series(catalog.Relists.Name, eq(catalog.LabelReason, catalog.RelistExpired)), num(sym.RelistsPerHour)),
		severity:    SeverityTicket,
		forDuration: "15m",
		summary:     "An rvsync informer relists over and over after 410 Gone.",
		description: fmt.Sprintf("%s: {{ $value | humanize }} full relists in the last hour because the watch's resource version expired (410 Gone), above %s per hour: each one lists the whole collection.", res, num(sym.RelistsPerHour)),
	}, {
		name:        AlertProbeErrors,
		expr:        fmt.Sprintf("sum %s (increase(%s[10m])) > 0", s.by(catalog.LabelProbe, catalog.LabelReason), s.series(catalog.ProbeErrors.Name)),
		severity:    SeverityTicket,
		forDuration: "15m",
		summary:     "rvsync probes keep failing.",
		description: fmt.Sprintf("%s: the {{ $labels.probe }} probe failed {{ $value | humanize }} times in the last 10 minutes with reason {{ $labels.reason }}, continuously for 15 minutes, so its SLIs are missing or wrong.", res),
	}}
	rules := make([]rulefmt.Rule, len(defs))
	for i, d := range defs {
		rules[i] = s.alert(d)
	}
	return rules
}
