package sim

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// The resources random histories draw from.
var (
	resConfigMaps = Watched{ResourceSpec: model.ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}}
	resSecrets    = Watched{ResourceSpec: model.ResourceSpec{Version: "v1", Plural: "secrets", Kind: "Secret", Namespaced: true}}
	resWidgets    = Watched{ResourceSpec: model.ResourceSpec{Group: "example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}}
	resDeploys    = Watched{ResourceSpec: model.ResourceSpec{Group: "apps", Version: "v1", Plural: "deployments", Kind: "Deployment", Namespaced: true, Generations: true}}
	resEvents     = Watched{ResourceSpec: model.ResourceSpec{Version: "v1", Plural: "events", Kind: "Event", Namespaced: true, Etcd: "events"}, Space: "events"}
	resMetrics    = Watched{ResourceSpec: model.ResourceSpec{Group: "metrics.example.io", Version: "v1", Plural: "samples", Kind: "Sample", Namespaced: true, Opaque: true}}
	resNoBookmark = Watched{ResourceSpec: model.ResourceSpec{Group: "legacy.example.io", Version: "v1", Plural: "gadgets", Kind: "Gadget", Namespaced: true, NoBookmarks: true}}
)

// The dimensions of the world that random histories draw only when
// Widened holds them (TestRandomHistories' -sim.widen): each found lies
// that are not fixed yet (kept in the corpora), and joins the default draw
// once they are.
const (
	WidenOrder     = "order"     // any resource first in --resources, `space:` omitted for a resource on its own etcd
	WidenInformers = "informers" // an operator's informer of a resource beside the exporter's
	WidenNoStart   = "nostart"   // the monitor's Start never called
	WidenHTTP1     = "http1"     // every client on HTTP/1.1
	WidenScopes    = "scopes"    // an operator's informers of a resource scoped to one namespace each
	WidenSelectors = "selectors" // an operator's informers of a resource selected by label
	WidenLifecycle = "lifecycle" // an operator's informer of a resource started late, stopped early
	WidenRestarts  = "restarts"  // an operator's informer of a resource stopped and built again
	WidenTyped     = "typed"     // an operator's typed and metadata informers of one resource
	WidenFields    = "fields"    // an operator's informer of one object by name (a field selector)
	WidenCanaries  = "canaries"  // canaries of several resources, on any etcd, configmaps' or not
	WidenCutoff    = "cutoff"    // an API server cut off etcd (fault Cutoff)
)

// Dimensions lists every widened dimension, in the order Draws names them.
var Dimensions = []string{WidenOrder, WidenInformers, WidenNoStart, WidenHTTP1, WidenScopes, WidenSelectors, WidenLifecycle, WidenRestarts, WidenTyped, WidenFields, WidenCanaries, WidenCutoff}

// Widened holds the dimensions random histories draw beyond the default.
var Widened = map[string]bool{}

// Draws names the widened dimensions the setup drew (in Dimensions'
// order): what a run's shares count, and what a history's failure is
// read with.
func (s Setup) Draws() []string {
	drew := map[string]bool{
		WidenOrder:    len(s.Resources) > 0 && s.Resources[0].Name() != resConfigMaps.Name(),
		WidenNoStart:  s.NoStart,
		WidenHTTP1:    s.HTTP1,
		WidenCanaries: len(s.MoreCanaries) > 0,
	}
	for _, r := range s.Resources {
		if r.Etcd != "" && r.Space == "" {
			drew[WidenOrder] = true
		}
		for _, in := range r.Informers {
			drew[WidenInformers] = drew[WidenInformers] || in.Host == HostController
			drew[WidenScopes] = drew[WidenScopes] || in.Namespace != ""
			drew[WidenSelectors] = drew[WidenSelectors] || in.Selector != ""
			drew[WidenFields] = drew[WidenFields] || in.Field != ""
			drew[WidenTyped] = drew[WidenTyped] || in.Typed
			drew[WidenRestarts] = drew[WidenRestarts] || in.RestartAfter > 0
			drew[WidenLifecycle] = drew[WidenLifecycle] || in.StartAfter > 0
		}
	}
	return s.drawn(drew)
}

// drawn names the dimensions drew holds, in Dimensions' order.
func (s Setup) drawn(drew map[string]bool) []string {
	var names []string
	for _, d := range Dimensions {
		if drew[d] {
			names = append(names, d)
		}
	}
	return names
}

// Draws names the widened dimensions the history drew: its setup's, and
// its faults' (a Cutoff).
func (h History) Draws() []string {
	names := h.Setup.Draws()
	for _, f := range h.Faults {
		if f.Kind == Cutoff {
			drew := map[string]bool{WidenCutoff: true}
			for _, n := range names {
				drew[n] = true
			}
			return h.Setup.drawn(drew)
		}
	}
	return names
}

// Generate returns the random history of seed: a topology, a workload and
// up to a few faults, each drawn from what clusters run and what goes
// wrong in them. dur bounds its length.
func Generate(seed uint64, dur time.Duration) History {
	rng := rand.New(rand.NewPCG(seed, 0x68697374))
	pick := func(xs ...float64) float64 { return xs[rng.IntN(len(xs))] }
	h := History{Seed: seed, Duration: dur/2 + time.Duration(rng.Int64N(int64(dur/2)))}
	h.Duration = h.Duration.Round(time.Minute)
	s := &h.Setup
	if rng.Float64() < 0.3 {
		s.Servers = 2 + rng.IntN(2)
	}
	// three in four scrape the API servers too (kube-prometheus-stack
	// does); drawn from the seed, not the stream, so that the histories of
	// a seed stay what they were before it was drawn
	s.ServerMetrics = seed%4 != 0
	progress := []time.Duration{5 * time.Second, 10 * time.Minute, 0}[rng.IntN(3)]
	s.Etcds = []model.EtcdSpec{{Name: model.MainEtcd, Revision: 1000, ProgressNotify: progress}}
	s.NoFreshnessReads = rng.Float64() < 0.2
	h.Background = pick(0, 10, 100, 1000)
	s.Resources = []Watched{resConfigMaps}
	for _, r := range []Watched{resSecrets, resWidgets, resDeploys, resEvents, resMetrics, resNoBookmark} {
		if rng.Float64() < 0.25 {
			s.Resources = append(s.Resources, r)
		}
	}
	for _, r := range s.Resources {
		if r.Etcd == "events" {
			s.Etcds = append(s.Etcds, model.EtcdSpec{Name: "events", Revision: uint64(pick(10, 1e7)), ProgressNotify: progress})
		}
	}
	if rng.Float64() < 0.7 {
		s.Canary = resConfigMaps.Name()
	}
	for _, r := range s.Resources {
		rate := pick(0, 0, 0.05, 0.5, 5)
		if rate == 0 {
			continue
		}
		h.Loads = append(h.Loads, Load{Resource: r.Name(), Start: 0, End: h.Duration, Rate: rate, Keys: int(pick(1, 5, 20))})
	}
	for range rng.IntN(4) {
		h.Faults = append(h.Faults, randomFault(rng, &h))
	}
	slices.SortFunc(h.Faults, func(a, b Fault) int { return int(a.Start - b.Start) })
	// Dimensions drawn after the ones above, so that a seed keeps the
	// topology, workload and faults it drew before they were added.
	if rng.Float64() < 0.5 {
		// kube-apiserver's cacher: its bookmarks trail a progress
		// notification by up to its 1s dispatch tick
		s.DispatchLag = time.Second
	}
	if rng.Float64() < 0.5 {
		// a large resource's lists, or a busy server's, take seconds
		s.ListLatency = 2 * time.Second
	}
	// Each is drawn whether or not Widened holds it, so that a seed's
	// other draws stay the same when it is turned on.
	order := slices.Clone(s.Resources)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if Widened[WidenOrder] {
		// --resources in any order: the first resource of an RV space
		// is its head probe's reference, which may be one on its own etcd
		s.Resources = order
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.5 && r.Space != "" && Widened[WidenOrder] {
			// a resource on its own etcd without its `space:` (the
			// README calls it optional): the monitor must find out
			r.Space = ""
		}
		if rng.Float64() < 0.2 && Widened[WidenInformers] {
			// an operator's informer of the resource beside the
			// exporter's, measured through Monitor.Instrument on a
			// connection of its own
			r.Informers = []Informer{{}, {Host: HostController, Embedded: true}}
		}
	}
	// a library user who never runs the monitor's Start
	s.NoStart = rng.Float64() < 0.05 && Widened[WidenNoStart]
	// clients on HTTP/1.1 (DISABLE_HTTP2, or a proxy that downgrades)
	s.HTTP1 = rng.Float64() < 0.25 && Widened[WidenHTTP1]
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenScopes] && r.Namespaced {
			// an operator's cache of the resource per namespace
			// (controller-runtime's DefaultNamespaces): the writes',
			// the canary's, or one nothing is written to
			namespaces := [][]string{{LoadNamespace}, {CanaryNamespace}, {"quiet"}, {LoadNamespace, CanaryNamespace}, {LoadNamespace, "quiet"}}[rng.IntN(5)]
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			for _, ns := range namespaces {
				r.Informers = append(r.Informers, Informer{Host: HostController + "-" + ns, Embedded: true, Namespace: ns})
			}
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenSelectors] {
			// an operator's cache of the resource selected by label
			// (controller-runtime's ByObject label selectors, or a
			// sharded controller): half the objects each, the canary's
			// among them or not, one shard or both
			shards := [][]string{{"a"}, {"b"}, {"a", "b"}}[rng.IntN(3)]
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			for _, sh := range shards {
				r.Informers = append(r.Informers, Informer{Host: HostController + "-shard-" + sh, Embedded: true, Selector: model.ShardLabel + "=" + sh})
			}
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenLifecycle] {
			// an operator's informer of the resource that starts late
			// (its controller won its leader election), and may stop
			// (it no longer needs the resource) before the history ends
			in := Informer{Host: HostController + "-late", Embedded: true, StartAfter: time.Duration(30+rng.IntN(570)) * time.Second}
			if rng.Float64() < 0.5 {
				in.StopAfter = in.StartAfter + time.Duration(60+rng.IntN(840))*time.Second
			}
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			r.Informers = append(r.Informers, in)
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenRestarts] {
			// an operator's informer of the resource stopped and built
			// again on its connection (its cache re-created): the new one
			// lists from scratch and is instrumented anew
			stop := time.Duration(30+rng.IntN(870)) * time.Second
			in := Informer{Host: HostController + "-restarted", Embedded: true, StopAfter: stop, RestartAfter: stop + time.Duration(rng.IntN(300))*time.Second}
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			r.Informers = append(r.Informers, in)
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenTyped] {
			// an operator's typed informer of the resource (whole objects,
			// for a typed client's reads) beside its metadata informer
			// (another controller's watch): one GVR, two informers
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			r.Informers = append(r.Informers, Informer{Host: HostController + "-typed", Embedded: true, Typed: true}, Informer{Host: HostController + "-meta", Embedded: true})
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rng.Float64() < 0.3 && Widened[WidenFields] {
			// an operator's informer of one object by name (a field
			// selector): a loads' object or the canary's
			name := []string{"obj-0", CanaryName}[rng.IntN(2)]
			if len(r.Informers) == 0 {
				r.Informers = []Informer{{}}
			}
			r.Informers = append(r.Informers, Informer{Host: HostController + "-field", Embedded: true, Field: "metadata.name=" + name})
		}
	}
	for _, r := range s.Resources {
		if rng.Float64() < 0.3 && Widened[WidenCanaries] && r.Namespaced && !r.Opaque && r.Name() != s.Canary {
			// the exporter's canary.resources lists several: a custom
			// resource's, events' on an etcd of its own, beside
			// configmaps' or instead of it
			s.MoreCanaries = append(s.MoreCanaries, r.Name())
		}
	}
	// one API server cut off etcd (TestHAServerLosesEtcd's fault): its
	// watch caches stand still, what needs etcd through it hangs; drawn
	// last, whether widened or not, so that the draws before stay
	cutoff := Fault{Kind: Cutoff, Server: rng.IntN(max(1, s.Servers)),
		Start: (3*time.Minute + time.Duration(rng.Int64N(int64(max(time.Minute, h.Duration-8*time.Minute))))).Round(time.Second),
		Dur:   []time.Duration{45 * time.Second, 2 * time.Minute, 6 * time.Minute, 15 * time.Minute}[rng.IntN(4)]}
	if rng.Float64() < 0.4 && Widened[WidenCutoff] {
		h.Faults = append(h.Faults, cutoff)
		slices.SortStableFunc(h.Faults, func(a, b Fault) int { return int(a.Start - b.Start) })
	}
	return h
}

func randomFault(rng *rand.Rand, h *History) Fault {
	servers := max(1, h.Setup.Servers)
	res := h.Setup.Resources[rng.IntN(len(h.Setup.Resources))].Name()
	f := Fault{Start: 3*time.Minute + time.Duration(rng.Int64N(int64(max(time.Minute, h.Duration-8*time.Minute))))}
	f.Start = f.Start.Round(time.Second)
	f.Dur = []time.Duration{10 * time.Second, 45 * time.Second, 2 * time.Minute, 6 * time.Minute, 15 * time.Minute}[rng.IntN(5)]
	hosts := []string{HostInformers, HostInformers, HostProbe, HostCanary}
	switch rng.IntN(9) {
	case 0:
		f.Kind, f.Host, f.Reset = Freeze, hosts[rng.IntN(len(hosts))], rng.Float64() < 0.3
	case 1:
		f.Kind, f.Host, f.Latency = Slow, hosts[rng.IntN(len(hosts))], []time.Duration{200 * time.Millisecond, 2 * time.Second, 20 * time.Second}[rng.IntN(3)]
	case 2:
		f.Kind, f.Server, f.Latency = SlowServer, rng.IntN(servers), []time.Duration{200 * time.Millisecond, 3 * time.Second}[rng.IntN(2)]
	case 3:
		f.Kind, f.Host, f.Code = Refuse, []string{HostProbe, HostInformers}[rng.IntN(2)], []int{429, 403, 500}[rng.IntN(3)]
	case 4:
		f.Kind, f.Host = Hang, []string{HostProbe, HostInformers}[rng.IntN(2)]
	case 5:
		f.Kind, f.Server, f.Dur = Restart, rng.IntN(servers), []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}[rng.IntN(3)]
	case 6:
		f.Kind, f.Back, f.Reset, f.Dur = Restore, uint64([]int{100, 5000, 50000}[rng.IntN(3)]), rng.Float64() < 0.5, 20*time.Second
	case 7:
		f.Kind, f.Server, f.Resource = Stuck, rng.IntN(servers), res
	case 8:
		f.Kind, f.Resource = DeleteCRD, res
	}
	return f
}

// GoString renders h as Go source, to keep a failing history as a
// regression case.
func (h History) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "History{Seed: %d, Duration: %s, Background: %g,\n", h.Seed, goDuration(h.Duration), h.Background)
	s := h.Setup
	fmt.Fprintf(&b, "\tSetup: Setup{Servers: %d, NoFreshnessReads: %v, Canary: %q, Etcds: %#v,", s.Servers, s.NoFreshnessReads, s.Canary, s.Etcds)
	if s.DispatchLag != 0 {
		fmt.Fprintf(&b, " DispatchLag: %s,", goDuration(s.DispatchLag))
	}
	if s.ListLatency != 0 {
		fmt.Fprintf(&b, " ListLatency: %s,", goDuration(s.ListLatency))
	}
	if s.NoStart {
		b.WriteString(" NoStart: true,")
	}
	if s.HTTP1 {
		b.WriteString(" HTTP1: true,")
	}
	if s.ServerMetrics {
		b.WriteString(" ServerMetrics: true,")
	}
	if len(s.MoreCanaries) > 0 {
		fmt.Fprintf(&b, " MoreCanaries: %#v,", s.MoreCanaries)
	}
	b.WriteString("\n\t\tResources: []Watched{")
	for _, r := range s.Resources {
		fmt.Fprintf(&b, "%s, ", resVar(r))
	}
	b.WriteString("}},\n\tLoads: []Load{")
	for _, l := range h.Loads {
		fmt.Fprintf(&b, "{Resource: %q, Start: %s, End: %s, Rate: %g, Keys: %d}, ", l.Resource, goDuration(l.Start), goDuration(l.End), l.Rate, l.Keys)
	}
	b.WriteString("},\n\tFaults: []Fault{")
	for _, f := range h.Faults {
		b.WriteString(f.String() + ", ")
	}
	b.WriteString("},\n}")
	return b.String()
}

// resVar renders r as Go source: the name of the variable it is, or one of
// their specs with the monitor's configuration of it.
func resVar(r Watched) string {
	for name, v := range map[string]Watched{"resConfigMaps": resConfigMaps, "resSecrets": resSecrets, "resWidgets": resWidgets, "resDeploys": resDeploys, "resEvents": resEvents, "resMetrics": resMetrics, "resNoBookmark": resNoBookmark} {
		if v.Name() != r.Name() {
			continue
		}
		if reflect.DeepEqual(v, r) {
			return name
		}
		var ins []string
		for _, in := range r.Informers {
			ns := ""
			if in.Namespace != "" {
				ns = fmt.Sprintf(", Namespace: %q", in.Namespace)
			}
			if in.Selector != "" {
				ns += fmt.Sprintf(", Selector: %q", in.Selector)
			}
			if in.StartAfter != 0 {
				ns += ", StartAfter: " + goDuration(in.StartAfter)
			}
			if in.StopAfter != 0 {
				ns += ", StopAfter: " + goDuration(in.StopAfter)
			}
			if in.Typed {
				ns += ", Typed: true"
			}
			if in.Field != "" {
				ns += fmt.Sprintf(", Field: %q", in.Field)
			}
			if in.RestartAfter != 0 {
				ns += ", RestartAfter: " + goDuration(in.RestartAfter)
			}
			ins = append(ins, fmt.Sprintf("{Host: %q, Embedded: %v, SlowStore: %s%s}", in.Host, in.Embedded, goDuration(in.SlowStore), ns))
		}
		return fmt.Sprintf("{ResourceSpec: %s.ResourceSpec, Space: %q, Informers: []Informer{%s}}", name, r.Space, strings.Join(ins, ", "))
	}
	return fmt.Sprintf("%#v", r)
}
