package probe

import (
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
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

	StalenessKnown     bool
	StalenessSeconds   float64
	ProofPeriodKnown   bool
	ProofPeriodSeconds float64
	HeadAgeKnown       bool
	HeadAgeSeconds     float64

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

var (
	descHeadRV         = newDesc(catalog.HeadResourceVersion)
	descInformerRV     = newDesc(catalog.InformerResourceVersion)
	descLag            = newDesc(catalog.ResourceVersionLag)
	descStaleness      = newDesc(catalog.CacheStaleness)
	descProofPeriod    = newDesc(catalog.FreshnessProofPeriod)
	descSilence        = newDesc(catalog.WatchSilence)
	descBookmarkPeriod = newDesc(catalog.WatchBookmarkPeriod)
	descHeadAge        = newDesc(catalog.HeadAge)
	descState          = newDesc(catalog.ResourceState)
	descInfo           = newDesc(catalog.ResourceInfo)
	descSynced         = newDesc(catalog.InformerSynced)
	descObjects        = newDesc(catalog.Objects)
	descUnconverged    = newDesc(catalog.UnconvergedObjects)
	descUnobservable   = newDesc(catalog.UnobservableObjects)
	descOldest         = newDesc(catalog.OldestUnconverged)
	descCanaryLast     = newDesc(catalog.CanaryLastDelivered)
	descQueueDepth     = newDesc(catalog.StoreQueueDepth)
	descQueueOldest    = newDesc(catalog.StoreQueueOldest)
)

// gaugeCollector turns the trackers' snapshots into gauges at scrape time.
// It keeps each resource's label pairs from one scrape to the next, so that
// a scrape allocates per series only its value: building the labels of
// every series anew was the largest cost of a scrape after client_golang's
// own (BenchmarkScrape200, docs/benchmarks.md).
type gaugeCollector struct {
	snapshots func() []snapshot

	mu     sync.Mutex
	labels map[string]*resourceLabels // by resource; the resources of the last scrape
}

// resourceDescs are the gauges whose only label is the resource; Describe
// and the label cache read them, so a new such gauge goes here.
var resourceDescs = []*prometheus.Desc{
	descHeadRV, descInformerRV, descLag, descStaleness, descProofPeriod, descSilence, descBookmarkPeriod,
	descHeadAge, descSynced, descObjects, descUnconverged, descUnobservable, descOldest, descCanaryLast,
	descQueueDepth, descQueueOldest,
}

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range resourceDescs {
		ch <- d
	}
	ch <- descState
	ch <- descInfo
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	snaps := c.snapshots()
	labels := c.labelsOf(snaps)
	for i, s := range snaps {
		l := labels[i]
		if l.err != nil {
			ch <- prometheus.NewInvalidMetric(descInfo, l.err)
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			labels, ok := l.byDesc[d]
			if !ok {
				ch <- undescribed(d)
				return
			}
			ch <- &constGauge{desc: d, labels: labels, value: v}
		}
		if s.HeadKnown {
			gauge(descHeadRV, float64(s.HeadRV))
		}
		if s.InformerKnown {
			gauge(descInformerRV, float64(s.InformerRV))
		}
		if s.LagKnown {
			gauge(descLag, float64(s.Lag))
		}
		if s.StalenessKnown {
			gauge(descStaleness, s.StalenessSeconds)
		}
		if s.ProofPeriodKnown {
			gauge(descProofPeriod, s.ProofPeriodSeconds)
		}
		if s.HeadAgeKnown {
			gauge(descHeadAge, s.HeadAgeSeconds)
		}
		if s.SilenceKnown {
			gauge(descSilence, s.SilenceSeconds)
		}
		gauge(descBookmarkPeriod, s.BookmarkPeriodSeconds)
		for j, st := range catalog.States() {
			ch <- &constGauge{desc: descState, labels: l.state[j], value: boolFloat(st == s.State)}
		}
		ch <- &constGauge{desc: descInfo, labels: l.info, value: 1}
		gauge(descSynced, boolFloat(s.Synced))
		gauge(descObjects, float64(s.Objects))
		gauge(descQueueDepth, float64(s.QueueDepth))
		gauge(descQueueOldest, s.QueueOldestSeconds)
		if s.Convergence != nil {
			gauge(descUnconverged, float64(s.Convergence.Unconverged))
			gauge(descUnobservable, float64(s.Convergence.Unobservable))
			gauge(descOldest, s.Convergence.OldestSeconds)
		}
		if s.CanaryLastDelivered > 0 {
			gauge(descCanaryLast, s.CanaryLastDelivered)
		}
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

// undescribed reports a gauge missing from resourceDescs (a bug) as a
// scrape error.
func undescribed(d *prometheus.Desc) prometheus.Metric {
	return prometheus.NewInvalidMetric(d, fmt.Errorf("probe: %v is not among resourceDescs", d))
}

// resourceLabels are the label pairs of one resource's gauge series. They
// are shared by the series of every scrape and never modified (slices
// clipped, so a wrapping registry's append copies them).
type resourceLabels struct {
	space  string
	byDesc map[*prometheus.Desc][]*dto.LabelPair // the resourceDescs
	state  [][]*dto.LabelPair                    // descState, per catalog.States()
	info   []*dto.LabelPair                      // descInfo
	err    error                                 // invalid label values
}

func newResourceLabels(resource, space string) *resourceLabels {
	l := &resourceLabels{space: space, byDesc: make(map[*prometheus.Desc][]*dto.LabelPair, len(resourceDescs))}
	for _, d := range resourceDescs {
		l.byDesc[d] = l.pairs(d, resource)
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
		l.err = err
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
