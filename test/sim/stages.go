package sim

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// stageWindow is how long before a page a fault may have begun and still
// be what the page is about: a stall pages within stallPage, a staleness
// burn within stalePage.
const stageWindow = 15 * time.Minute

// deliveryAlerts are the pages about a resource's deliveries: the ones
// whose delay has a stage (#42); the latency SLOs time requests, and the
// other symptoms name their cause in their own text.
var deliveryAlerts = []string{"RvsyncCacheStalenessBudgetBurn", "RvsyncResourceVersionLagBudgetBurn", "RvsyncCanaryDeliveryBudgetBurn", "RvsyncWatchStalled"}

// stageSaid reads the stage a page's description names ("(stage
// etcd_to_cache, from ...)") and, for a watch cache, its API server.
var (
	stageSaid    = regexp.MustCompile(`\(stage ([a-z_]+), from `)
	instanceSaid = regexp.MustCompile(`the watch cache of API server (\S+),`)
)

// StageVerdict is the stage oracle's account of one history: how many
// pages it judged, and the ones that named no stage or the wrong one.
type StageVerdict struct {
	Judged     int
	Violations []Violation
}

// CheckStages judges the stage each delivery page names where the API
// servers' metrics are scraped (Setup.ServerMetrics; #42, "the page says
// where"). A page is judged when, as it fires, the faults on its
// resource's path are of one stage: a watch cache that stopped following
// etcd (Stuck), or every cache of an API server cut off etcd (Cutoff)
// that its informers' connection was placed on, is etcd_to_cache on
// that API server; a slow, frozen, hung or refused connection of its
// informers, or a slow API server, is cache_to_client. A page is not
// judged where anything else happened in stageWindow before it (an API
// server restart, an etcd restore, a deleted CRD, a fault of the head
// probe's or the canary's path, an API server cut off etcd that the head
// probe's or the canary's connection was placed on, or any on HTTP/1.1
// behind several API servers, where a request may take a connection
// placed on it: what the stage rules compare with is then itself
// disturbed), nor without the servers' metrics, nor for a resource the
// API servers serve from no watch cache (Watched.Cached: an extension API
// server's, or one with the watch cache off, whose series no server
// reports; seed 1700074 judged an aggregated API's stall page, which the
// model's scrape had given series a real server never has). A judged page must name
// its true stage ("stage unnamed" otherwise, but for a monitor whose
// Start never runs: with no head nothing measures a cache against etcd,
// seed 3200561) and no other ("wrong stage"), and a watch cache's stage its API server. scrapes say where
// each host's connections were placed (Scrape.Routes).
func CheckStages(h History, scrapes []Scrape, fired []Firing) StageVerdict {
	var v StageVerdict
	if !h.Setup.ServerMetrics {
		return v
	}
	routes := routesOf(scrapes)
	for _, f := range fired {
		if !f.Page() || !slices.Contains(deliveryAlerts, f.Alert) {
			continue
		}
		if r, _ := h.watched(f.Resource); !r.Cached() {
			continue // no watch-cache series of it: its pages read as without the servers' metrics
		}
		stage, instance, ok := h.trueStage(f.Resource, f.From, routes)
		if !ok {
			continue
		}
		v.Judged++
		said := stageSaid.FindStringSubmatch(f.Description)
		switch {
		case said == nil && h.Setup.NoStart:
			// no head probe: nothing measures a watch cache against
			// etcd, and a page that names no stage says so honestly
		case said == nil:
			v.Violations = append(v.Violations, Violation{At: f.From, Resource: f.Resource, Rule: "stage unnamed",
				Detail: fmt.Sprintf("%v names no stage, the delay's is %s %s: %q", f, stage, instance, f.Description)})
		case said[1] != stage:
			v.Violations = append(v.Violations, Violation{At: f.From, Resource: f.Resource, Rule: "wrong stage",
				Detail: fmt.Sprintf("%v names stage %s, the delay's is %s %s: %q", f, said[1], stage, instance, f.Description)})
		case stage == slo.StageEtcdToCache:
			if in := instanceSaid.FindStringSubmatch(f.Description); in == nil || in[1] != instance {
				v.Violations = append(v.Violations, Violation{At: f.From, Resource: f.Resource, Rule: "wrong stage",
					Detail: fmt.Sprintf("%v names another API server's watch cache than %s's: %q", f, instance, f.Description)})
			}
		}
	}
	return v
}

// trueStage returns the stage of what delays res's deliveries at t (and,
// for a watch cache, its API server's instance), when one stage's faults
// alone are active then and nothing else disturbed the resource's path
// in stageWindow before.
func (h History) trueStage(res string, t time.Duration, routes routes) (stage, instance string, ok bool) {
	r, found := h.watched(res)
	if !found {
		return "", "", false
	}
	hosts := map[string]bool{HostInformers: len(r.Informers) == 0} // the exporter's, by default
	for _, in := range r.Informers {
		hosts[cmp.Or(in.Host, HostInformers)] = true
	}
	for _, f := range h.Faults {
		if f.Start > t || f.End() < t-stageWindow {
			continue
		}
		active := f.Start <= t && f.End() >= t
		var s, i string
		switch f.Kind {
		case Stuck:
			if f.Resource != res {
				continue
			}
			s, i = slo.StageEtcdToCache, serverInstance(f.Server)
		case Slow, Freeze, Hang, Refuse:
			switch {
			case hosts[f.Host]:
				s = slo.StageCacheToClient
			case f.Host == HostProbe || f.Host == HostCanary:
				return "", "", false // the head or the canary, what stages are measured with
			default:
				continue
			}
		case Cutoff:
			// its caches stand still, what needs etcd through it hangs:
			// the stage of the resources whose informers it serves, unless
			// the head or the canary went through it too
			if h.Setup.HTTP1 && h.Setup.Servers > 1 {
				return "", "", false // any request may take a connection placed on it
			}
			from, to := max(f.Start, t-stageWindow), min(f.End(), t)
			if routes.through(HostProbe, f.Server, from, to) || len(h.Setup.canaries()) > 0 && routes.through(HostCanary, f.Server, from, to) {
				return "", "", false // the head or the canary, what stages are measured with
			}
			served := false
			for host, on := range hosts {
				served = served || on && routes.through(host, f.Server, from, to)
			}
			if !served {
				continue // its informers went through another API server
			}
			s, i = slo.StageEtcdToCache, serverInstance(f.Server)
		case SlowServer:
			s = slo.StageCacheToClient
		default: // a restart, a restore, a deleted CRD
			return "", "", false
		}
		if !active {
			continue
		}
		if stage != "" && (s != stage || i != instance) {
			return "", "", false // two stages at once
		}
		stage, instance = s, i
	}
	return stage, instance, stage != ""
}

// routes is where each host's connections were placed at each scrape
// (Scrape.Routes), by the time since the first scrape (as a Firing's).
type routes struct {
	at []time.Duration
	on []map[string][]int
}

func routesOf(scrapes []Scrape) routes {
	var r routes
	for _, s := range scrapes {
		r.at = append(r.at, s.At.Sub(scrapes[0].At))
		r.on = append(r.on, s.Routes)
	}
	return r
}

// through reports whether a connection of host was placed on API server
// i at a scrape in [from, to].
func (r routes) through(host string, i int, from, to time.Duration) bool {
	for k, at := range r.at {
		if at >= from && at <= to && slices.Contains(r.on[k][host], i) {
			return true
		}
	}
	return false
}
