package probe

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
)

// snapshot is the scrape-time state of one watched resource. A value whose
// Known flag is false is not exported: unknown is not 0.
type snapshot struct {
	Resource string
	Space    string
	State    string // a catalog.State* value

	HeadKnown     bool
	HeadRV        uint64
	InformerKnown bool
	InformerRV    uint64
	LagKnown      bool
	Lag           uint64

	StalenessKnown   bool
	StalenessSeconds float64
	// staleUnknown: a synced informer's staleness is unknown, so the
	// worst is too, whatever the others' (see worst)
	staleUnknown       bool
	ProofPeriodKnown   bool
	ProofPeriodSeconds float64
	HeadAgeKnown       bool
	HeadAgeSeconds     float64
	// staleProven: an informer provably lacks a change, so the worst is
	// at least its staleness, whatever the others' (see worst)
	staleProven bool

	// SilenceSeconds and BookmarkPeriodSeconds are one informer's: the
	// one whose silence is the most bookmark periods of its own (see
	// worst).
	SilenceKnown          bool
	SilenceSeconds        float64
	BookmarkPeriodSeconds float64

	Synced  bool
	Objects int

	// QueueDepth is the deltas its worst informer received on the wire and
	// has not yet applied to its store; QueueOldestSeconds, how long the
	// oldest of them has waited.
	QueueDepth         int
	QueueOldestSeconds float64

	// Convergence is set for resources tracked for observedGeneration.
	Convergence *convergenceSnapshot

	// CanaryLastDelivered is the Unix time of the latest canary delivery (0: none).
	CanaryLastDelivered float64
}

// convergenceSnapshot is the scrape-time state of generation convergence.
type convergenceSnapshot struct {
	Unconverged   int
	Unobservable  int
	OldestSeconds float64
}

// informerValues is what one informer reports at a scrape.
type informerValues struct {
	synced, stopped bool
	objects         int
	state           string
	rv              uint64
	rvKnown         bool
	lag             uint64
	lagKnown        bool
	staleness       time.Duration
	stalenessKnown  bool
	silence         time.Duration
	silenceKnown    bool
	cadence         time.Duration
	proofPeriod     time.Duration
	proofKnown      bool
	queueDepth      int
	queueOldest     time.Duration
	// staleProven: staleness is a bound from the store's last proof, as
	// it provably lacks a change (env.Overdue), not a measure
	staleProven bool
}

// worst folds one informer's values into the resource's: the worst of its
// informers (lowest RV, highest lag, staleness and queue; the silence
// most overdue, with its informer's bookmark period).
func (s *snapshot) worst(v informerValues) {
	s.Synced = s.Synced && v.synced
	s.Objects = max(s.Objects, v.objects)
	s.QueueDepth = max(s.QueueDepth, v.queueDepth)
	s.QueueOldestSeconds = max(s.QueueOldestSeconds, v.queueOldest.Seconds())
	if v.rvKnown && (!s.InformerKnown || v.rv < s.InformerRV) {
		s.InformerKnown, s.InformerRV = true, v.rv
	}
	if v.lagKnown && (!s.LagKnown || v.lag > s.Lag) {
		s.LagKnown, s.Lag = true, v.lag
	}
	if v.stalenessKnown && (!s.StalenessKnown || v.staleness.Seconds() > s.StalenessSeconds) {
		s.StalenessKnown, s.StalenessSeconds = true, max(0, v.staleness.Seconds())
	}
	// one informer's known staleness is not the resource's while another
	// synced one's, whose owner reads it, is unknown (an informer built
	// again after a restore beside ones that have not listed since),
	// unless a store provably lacks a change: the worst is at least its
	// staleness then
	s.staleUnknown = s.staleUnknown || v.synced && !v.stalenessKnown
	s.staleProven = s.staleProven || v.stalenessKnown && v.staleProven
	// the silence and the bookmark period are one informer's, the one
	// most overdue against its own cadence: RvsyncWatchStalled compares
	// the two, and the longest silence against another informer's longer
	// cadence (a quiet watch's whose server sends no bookmark) hid a
	// stalled watch (simulation page corpus seed 380801)
	if v.silenceKnown {
		if !s.SilenceKnown || overdue(v.silence.Seconds(), v.cadence.Seconds()) > overdue(s.SilenceSeconds, s.BookmarkPeriodSeconds) {
			s.SilenceKnown, s.SilenceSeconds, s.BookmarkPeriodSeconds = true, max(0, v.silence.Seconds()), v.cadence.Seconds()
		}
	} else if !s.SilenceKnown {
		s.BookmarkPeriodSeconds = max(s.BookmarkPeriodSeconds, v.cadence.Seconds())
	}
	if v.proofKnown && (!s.ProofPeriodKnown || v.proofPeriod.Seconds() > s.ProofPeriodSeconds) {
		s.ProofPeriodKnown, s.ProofPeriodSeconds = true, v.proofPeriod.Seconds()
	}
	if stateRank[v.state] > stateRank[s.State] {
		s.State = v.state
	}
}

// overdue returns a silence in bookmark periods of its watch's cadence
// (never below kube-apiserver's period).
func overdue(silence, cadence float64) float64 {
	return silence / max(cadence, proof.DefaultBookmarkPeriod.Seconds())
}

// gauge is one per-resource gauge: its catalog entry and what it reads of a
// snapshot (ok false: unknown, not exported). Adding a gauge is a catalog
// entry and a row here.
type gauge struct {
	metric catalog.Metric
	value  func(s *snapshot) (v float64, ok bool)
	desc   *prometheus.Desc
}

// gauges are the gauges whose only label is the resource.
var gauges = []*gauge{
	{metric: catalog.HeadResourceVersion, value: func(s *snapshot) (float64, bool) { return float64(s.HeadRV), s.HeadKnown }},
	{metric: catalog.InformerResourceVersion, value: func(s *snapshot) (float64, bool) { return float64(s.InformerRV), s.InformerKnown }},
	{metric: catalog.ResourceVersionLag, value: func(s *snapshot) (float64, bool) { return float64(s.Lag), s.LagKnown }},
	{metric: catalog.CacheStaleness, value: func(s *snapshot) (float64, bool) { return s.StalenessSeconds, s.StalenessKnown }},
	{metric: catalog.FreshnessProofPeriod, value: func(s *snapshot) (float64, bool) { return s.ProofPeriodSeconds, s.ProofPeriodKnown }},
	{metric: catalog.HeadAge, value: func(s *snapshot) (float64, bool) { return s.HeadAgeSeconds, s.HeadAgeKnown }},
	{metric: catalog.WatchSilence, value: func(s *snapshot) (float64, bool) { return s.SilenceSeconds, s.SilenceKnown }},
	{metric: catalog.WatchBookmarkPeriod, value: func(s *snapshot) (float64, bool) { return s.BookmarkPeriodSeconds, true }},
	{metric: catalog.InformerSynced, value: func(s *snapshot) (float64, bool) { return boolFloat(s.Synced), true }},
	{metric: catalog.Objects, value: func(s *snapshot) (float64, bool) { return float64(s.Objects), true }},
	{metric: catalog.StoreQueueDepth, value: func(s *snapshot) (float64, bool) { return float64(s.QueueDepth), true }},
	{metric: catalog.StoreQueueOldest, value: func(s *snapshot) (float64, bool) { return s.QueueOldestSeconds, true }},
	{metric: catalog.UnconvergedObjects, value: func(s *snapshot) (float64, bool) {
		return float64(convergenceOf(s).Unconverged), s.Convergence != nil
	}},
	{metric: catalog.UnobservableObjects, value: func(s *snapshot) (float64, bool) {
		return float64(convergenceOf(s).Unobservable), s.Convergence != nil
	}},
	{metric: catalog.OldestUnconverged, value: func(s *snapshot) (float64, bool) {
		return convergenceOf(s).OldestSeconds, s.Convergence != nil
	}},
	{metric: catalog.CanaryLastDelivered, value: func(s *snapshot) (float64, bool) { return s.CanaryLastDelivered, s.CanaryLastDelivered > 0 }},
}

func convergenceOf(s *snapshot) convergenceSnapshot {
	if s.Convergence == nil {
		return convergenceSnapshot{}
	}
	return *s.Convergence
}

// The gauges with more labels than the resource.
var (
	descState = newDesc(catalog.ResourceState) // one series per state, 1 for the resource's
	descInfo  = newDesc(catalog.ResourceInfo)  // the resource's RV space
)

func init() {
	for _, g := range gauges {
		g.desc = newDesc(g.metric)
	}
}

// gaugeCollector turns the resources' snapshots into gauges at scrape
// time. It keeps each resource's label pairs from one scrape to the next,
// so that a scrape allocates per series only its value: building the
// labels of every series anew was the largest cost of a scrape after
// client_golang's own (BenchmarkScrape200, docs/benchmarks.md).
type gaugeCollector struct {
	snapshots func() []snapshot

	mu     sync.Mutex
	labels map[string]*resourceLabels // by resource; the resources of the last scrape
}

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range gauges {
		ch <- g.desc
	}
	ch <- descState
	ch <- descInfo
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	snaps := c.snapshots()
	labels := c.labelsOf(snaps)
	for i := range snaps {
		s, l := &snaps[i], labels[i]
		if l.err != nil {
			ch <- prometheus.NewInvalidMetric(descInfo, l.err)
			continue
		}
		for j, g := range gauges {
			if v, ok := g.value(s); ok {
				ch <- &constGauge{desc: g.desc, labels: l.gauges[j], value: v}
			}
		}
		for j, st := range catalog.States() {
			ch <- &constGauge{desc: descState, labels: l.state[j], value: boolFloat(st == s.State)}
		}
		ch <- &constGauge{desc: descInfo, labels: l.info, value: 1}
	}
}

// labelsOf returns the label pairs of each snapshot's series, reusing those
// of the last scrape, and forgets the resources no longer scraped.
func (c *gaugeCollector) labelsOf(snaps []snapshot) []*resourceLabels {
	out := make([]*resourceLabels, len(snaps))
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]*resourceLabels, len(snaps))
	for i, s := range snaps {
		l, ok := c.labels[s.Resource]
		if !ok || l.space != s.Space {
			l = newResourceLabels(s.Resource, s.Space)
		}
		next[s.Resource], out[i] = l, l
	}
	c.labels = next
	return out
}

// resourceLabels are the label pairs of one resource's gauge series. They
// are shared by the series of every scrape and never modified (slices
// clipped, so a wrapping registry's append copies them).
type resourceLabels struct {
	space  string
	gauges [][]*dto.LabelPair // per row of gauges
	state  [][]*dto.LabelPair // descState, per catalog.States()
	info   []*dto.LabelPair   // descInfo
	err    error              // invalid label values
}

func newResourceLabels(resource, space string) *resourceLabels {
	l := &resourceLabels{space: space}
	for _, g := range gauges {
		l.gauges = append(l.gauges, l.pairs(g.desc, resource))
	}
	for _, st := range catalog.States() {
		l.state = append(l.state, l.pairs(descState, resource, st))
	}
	l.info = l.pairs(descInfo, resource, space)
	return l
}

// pairs returns the label pairs of d's series with values, as
// client_golang validates and orders them, or records why they are invalid.
func (l *resourceLabels) pairs(d *prometheus.Desc, values ...string) []*dto.LabelPair {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, values...)
	var out dto.Metric
	if err == nil {
		err = m.Write(&out)
	}
	if err != nil {
		l.err = fmt.Errorf("%s: %w", d, err)
		return nil
	}
	return slices.Clip(out.Label)
}

// constGauge is one gauge sample of a scrape.
type constGauge struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
}

func (g *constGauge) Desc() *prometheus.Desc { return g.desc }

func (g *constGauge) Write(m *dto.Metric) error {
	m.Label, m.Gauge = g.labels, &dto.Gauge{Value: &g.value}
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
