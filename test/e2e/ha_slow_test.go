//go:build integration

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// informerDelay is how late the fault proxy of informersDelayed hands on
// every chunk between the informers and their API server, both ways:
// seconds, as a congested or far network path, and below what turns a
// slow connection into a broken one: client-go's HTTP/2 health check
// (a connection that read nothing for 30 s is pinged and closed when the
// answer takes 15 s; a delay set at once is such a silence) and the
// freshness reads' 30 s timeout (a read pays the delay twice).
const informerDelay = 8 * time.Second

// delayedCanaryThreshold is the canary-delivery SLO's threshold in
// informersDelayed's rules (chart value
// slo.canaryDelivery.thresholdSeconds; a bucket of the canary
// latency histogram): the default 30 s is above any delay that leaves
// the connection working (informerDelay), so a team that pages on
// delivery within seconds is what the scenario's Prometheus runs.
const delayedCanaryThreshold = 5

// delayedHold is how long informersDelayed keeps the delay on at least:
// beyond the first pages (about a minute with the suite's scaled windows),
// long enough for the stage rules' 5-minute percentiles and the slice
// window to hold nothing but the delay, so that a stage that is wrong
// only once the delay has lasted shows.
const delayedHold = 6 * time.Minute

// informersDelayed: the network between an exporter's informers and its
// API server is slow (the fault proxy delays every chunk by
// informerDelay, both ways) while that server, its watch cache and etcd
// stay healthy. The head probe and the canary reach the same server
// directly, so the head is current, the canary is written at once and
// delivered informerDelay late. Prometheus holds stageHistory of the API
// servers' series first, as in serverLosesEtcd. A page reaches the
// receiver whose Where names the stretch between the watch cache and the
// client (stage cache_to_client; in the runs so far with no API server
// named, as none closes slow watchers: the proxy reads all it is sent,
// so the server never waits on the client), and while the delay lasts no
// page names another stage, least of all a watch cache
// (etcd_to_cache), which follows etcd throughout. After the delay the
// exporter is fresh again and the pages resolve.
func (h *haStack) informersDelayed(t *testing.T) {
	h.scenario(t)
	ha := h.env.HA
	const server = 0
	direct := ha.Direct(h.token, server)
	proxy, slow := h.env.Proxy(t, direct)
	t.Logf("informers through a fault proxy to %s (instance %s), head probe and canary direct", ha.Servers[server].Name, serverInstance(ha.Servers[server]))
	e := h.startExporter(t, "slow-client", slow, direct, false)
	spec := h.spec
	spec.SLOs = slices.Clone(spec.SLOs)
	for i := range spec.SLOs {
		if spec.SLOs[i].Name == slo.CanaryDelivery {
			spec.SLOs[i].Threshold = delayedCanaryThreshold
		}
	}
	p := h.monitorWith(t, spec, e)
	h.waitStageHistory(t, p, e.cluster)
	h.logStages(t, p, e.cluster, "before the delay", slo.RuleWorstStage)

	before, err := testenv.Scrape(e.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	delayedAt := time.Now()
	proxy.SetDelay(informerDelay)
	ended := false
	end := func() {
		if !ended {
			proxy.SetDelay(0)
			ended = true
		}
	}
	t.Cleanup(end)
	t.Logf("every byte between the informers and %s now %v late", ha.Servers[server].Name, informerDelay)

	const bound = 8 * time.Minute
	page := h.hook.wait(t, bound, "a page of "+e.cluster, func(a notifiedAlert) bool { return resourcePage(a, e.cluster, delayedAt) })
	t.Logf("first page %v after the delay began: %s", page.Received.Sub(delayedAt).Round(time.Second), page)
	h.logStages(t, p, e.cluster, "at the first page")
	h.checkPage(t, page)

	names := func(a notifiedAlert) bool {
		d := a.Annotations["description"]
		return strings.Contains(d, " Where: between the API servers' watch cache and the client ") &&
			strings.Contains(d, "(stage "+slo.StageCacheToClient+", ")
	}
	named := h.hook.wait(t, bound, "a page naming the stretch between the watch cache and the client", func(a notifiedAlert) bool {
		return resourcePage(a, e.cluster, delayedAt) && names(a)
	})
	t.Logf("a page names %s %v after the delay began: %s", slo.StageCacheToClient, named.Received.Sub(delayedAt).Round(time.Second), named)
	t.Logf("its description: %q", named.Annotations["description"])
	h.logStages(t, p, e.cluster, "at the page naming it")

	// the delay lasts on; the condition under test is that no page names
	// another stage meanwhile
	if rest := time.Until(delayedAt.Add(delayedHold)); rest > 0 {
		t.Logf("holding the delay %v more", rest.Round(time.Second))
		time.Sleep(rest)
	}
	h.logStages(t, p, e.cluster, "at the end of the delay")
	if v, err := p.query(fmt.Sprintf(`max_over_time(%s{cluster=%q, %s=%q}[%s])`, slo.RuleWorstStage, e.cluster, slo.LabelStage, slo.StageEtcdToCache, promRange(time.Since(delayedAt)))); err != nil {
		t.Fatal(err)
	} else if len(v) > 0 {
		t.Errorf("a watch cache was the worst stage while only the informers' network was slow: %s", v)
	}
	m := h.hook.received()
	h.judgeWhere(t, e.cluster, delayedAt, time.Now(), "the delay", slo.StageCacheToClient, names)
	paged := map[string]bool{}
	for _, a := range m {
		if resourcePage(a, e.cluster, delayedAt) {
			paged[a.Labels["alertname"]+"/"+a.Labels[catalog.LabelResource]] = true
		}
	}
	t.Logf("pages over the delay: %v", keys(paged))
	// a watch reopened meanwhile (at its timeout) pays the delay twice
	// before it delivers what came in between: the deliveries furthest
	// behind
	if after, err := testenv.Scrape(e.MetricsURL()); err == nil {
		var reopened []string
		for _, r := range h.resources {
			if n := after.Sum(catalog.WatchStarts.Name, res(r)) - before.Sum(catalog.WatchStarts.Name, res(r)); n > 0 {
				reopened = append(reopened, fmt.Sprintf("%s %v", r, n))
			}
		}
		t.Logf("watches started over the delay: %v", reopened)
	}

	endedAt := time.Now()
	end()
	h.waitRecovered(t, p, e, page, endedAt)
}

// keys returns m's keys, sorted.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
