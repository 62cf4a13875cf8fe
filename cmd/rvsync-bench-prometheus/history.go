package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// A fleet is the synthetic exporter: the series of a profile, copied to n
// watched resources, with values that move as a real run's do (counters and
// histograms at the profile's rates, resource versions rising, staleness
// and silence sawing at the bookmark period) and a few incidents (a stalled
// watch, slow Lists) in which they move as the exporter's do then. One
// fleet writes the backfilled history and then serves the live scrapes, so
// the live series continue the stored ones.
type fleet struct {
	job, instance string
	series        []*synth
	incidents     map[string][]incident // by resource
	last          time.Time
}

// An incident is a fault of one resource between start and end.
type incident struct {
	resource   string
	start, end time.Time
	stall      bool // the watch stalls; otherwise its Lists are slow
}

// synth is one family instance of one resource: a gauge or counter (one
// series) or a classic histogram (its buckets, sum and count).
type synth struct {
	name     string
	typ      catalog.Type
	resource string
	base     labels.Labels // name and labels (resource, job, instance) but le
	text     string        // the label pairs as exposition text, without braces
	rate     float64       // counter increase or histogram observations per second
	value    float64       // gauge: the profile's value; counter: the current value
	bounds   []float64     // histogram: upper bounds, +Inf last
	probs    []float64     // histogram: share of observations per bucket
	counts   []float64     // histogram: observations per bucket (not cumulative)
	sum      float64
	phase    float64 // seconds: where the resource's sawtooth starts
	refs     []storage.SeriesRef
	lsets    []labels.Labels
	recorded bool // a recording rule's series: 0, or a burn while an incident lasts
}

// revisionsPerSecond is how fast the synthetic RV spaces' heads rise: a busy
// cluster's etcd.
const revisionsPerSecond = 20

// bookmarkPeriod is the API server's bookmark period, the height of a quiet
// resource's staleness and silence sawtooth.
const bookmarkPeriod = 60.0

// newFleet copies the profile's templates to n resources (the profile's own
// resources first, then copies of its plain ones) and draws incidents over
// [start, end) from seed: about one per resource-week, 20-90 minutes each.
func newFleet(p profile, n int, job, instance string, start, end time.Time, seed uint64) *fleet {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	f := &fleet{job: job, instance: instance, last: start, incidents: map[string][]incident{}}
	var names []string
	for i := range n {
		t := p.plain[i%len(p.plain)]
		name := fmt.Sprintf("bench%03d.%s", i, t.resource)
		if i < len(p.resources) {
			t = p.resources[i]
			name = t.resource
		}
		names = append(names, name)
		phase := rng.Float64() * bookmarkPeriod
		for _, m := range t.metrics {
			f.series = append(f.series, f.synth(m, name, phase))
		}
	}
	// one family's lines together, as the exposition format wants them
	slices.SortStableFunc(f.series, func(a, b *synth) int { return strings.Compare(a.name, b.name) })
	days := end.Sub(start).Hours() / 24
	for range max(1, int(float64(n)*days/7)) {
		at := start.Add(time.Duration(rng.Float64() * float64(end.Sub(start))))
		d := time.Duration(20+rng.IntN(70)) * time.Minute
		f.addIncident(incident{resource: names[rng.IntN(len(names))], start: at, end: at.Add(d), stall: rng.IntN(2) == 0})
	}
	return f
}

// addRecorded adds the recording rules' series lsets (as a Prometheus
// evaluating them wrote them) to the history: 0, or a burn of 0.5 while an
// incident of their resource lasts. Rules and panels that read them over the
// budget period then read as many samples as after a month of evaluation.
// The live exposition leaves them to the Prometheus evaluating the rules.
func (f *fleet) addRecorded(lsets []labels.Labels) {
	for _, l := range lsets {
		f.series = append(f.series, &synth{name: l.Get(model.MetricNameLabel), typ: catalog.Gauge, resource: l.Get(catalog.LabelResource), base: l, recorded: true})
	}
}

// synth makes the series of one template metric for a resource.
func (f *fleet) synth(m metricTemplate, resource string, phase float64) *synth {
	b := labels.NewBuilder(labels.EmptyLabels())
	b.Set(model.MetricNameLabel, m.name)
	var pairs []string
	for _, l := range m.labels {
		b.Set(l.Name, l.Value)
	}
	b.Set(catalog.LabelResource, resource)
	b.Set("job", f.job)
	b.Set("instance", f.instance)
	lset := b.Labels()
	lset.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel && l.Name != "job" && l.Name != "instance" {
			pairs = append(pairs, l.Name+"="+strconv.Quote(l.Value))
		}
	})
	s := &synth{name: m.name, typ: m.typ, resource: resource, base: lset, text: strings.Join(pairs, ","), rate: m.rate, value: m.value, phase: phase}
	if m.typ == catalog.Histogram {
		s.bounds = m.bounds
		s.probs = m.probs
		s.counts = make([]float64, len(m.bounds))
	}
	if m.typ == catalog.Counter {
		s.value = 0
	}
	return s
}

// addIncident adds a fault to the history.
func (f *fleet) addIncident(in incident) {
	f.incidents[in.resource] = append(f.incidents[in.resource], in)
}

// incident returns the incident of resource at t, if one lasts.
func (f *fleet) incident(resource string, t time.Time) (incident, bool) {
	for _, in := range f.incidents[resource] {
		if in.resource == resource && !t.Before(in.start) && t.Before(in.end) {
			return in, true
		}
	}
	return incident{}, false
}

// advance moves every series to t.
func (f *fleet) advance(t time.Time) {
	dt := t.Sub(f.last).Seconds()
	if dt <= 0 {
		return
	}
	f.last = t
	for _, s := range f.series {
		switch {
		case s.typ == catalog.Counter:
			s.value += s.rate * dt
		case s.typ == catalog.Histogram:
			n := s.rate * dt
			probs := s.probs
			if s.name == catalog.ListDuration.Name { // only Lists slow down in an incident
				if in, faulty := f.incident(s.resource, t); faulty && !in.stall {
					probs = slow(probs)
				}
			}
			for i, p := range probs {
				s.counts[i] += n * p
				s.sum += n * p * midpoint(s.bounds, i)
			}
		}
	}
}

// slow shifts a List-latency distribution to its slowest buckets: two
// thirds of the Lists of a slow API server take longer than 2.5 s.
func slow(probs []float64) []float64 {
	out := make([]float64, len(probs))
	for i, p := range probs {
		out[i] = p / 3
	}
	out[len(out)-3] += 2.0 / 3
	return out
}

// midpoint is a plausible observation of bucket i.
func midpoint(bounds []float64, i int) float64 {
	hi := bounds[i]
	if math.IsInf(hi, 1) {
		hi = 2 * bounds[i-1]
	}
	if i == 0 {
		return hi / 2
	}
	return (bounds[i-1] + hi) / 2
}

// gauge is a gauge's value at t.
func (f *fleet) gauge(s *synth, t time.Time) float64 {
	in, faulty := f.incident(s.resource, t)
	stall := faulty && in.stall
	sec := float64(t.UnixMilli()) / 1000
	saw := math.Mod(sec+s.phase, bookmarkPeriod)
	if s.recorded {
		if faulty {
			return 0.5
		}
		return 0
	}
	switch s.name {
	case catalog.HeadResourceVersion.Name:
		return math.Floor(sec * revisionsPerSecond)
	case catalog.InformerResourceVersion.Name:
		if stall {
			return math.Floor(float64(in.start.UnixMilli()) / 1000 * revisionsPerSecond)
		}
		return math.Floor(sec * revisionsPerSecond)
	case catalog.ResourceVersionLag.Name:
		if stall {
			return math.Floor(t.Sub(in.start).Seconds() * revisionsPerSecond)
		}
		return 0
	case catalog.CacheStaleness.Name, catalog.WatchSilence.Name:
		if stall {
			return t.Sub(in.start).Seconds() + saw
		}
		return saw
	case catalog.HeadAge.Name:
		return math.Mod(sec+s.phase, 5)
	case catalog.CanaryLastDelivered.Name:
		return sec - math.Mod(sec+s.phase, 10)
	}
	return s.value
}

// samples calls emit with every series' samples at t (histograms: each
// bucket cumulative, then sum and count).
func (f *fleet) samples(t time.Time, emit func(s *synth, i int, suffix, le string, v float64)) {
	f.advance(t)
	for _, s := range f.series {
		switch s.typ {
		case catalog.Histogram:
			cum := 0.0
			for i, c := range s.counts {
				cum += c
				emit(s, i, "_bucket", formatLe(s.bounds[i]), math.Floor(cum))
			}
			emit(s, len(s.counts), "_sum", "", s.sum)
			emit(s, len(s.counts)+1, "_count", "", math.Floor(cum))
		case catalog.Counter:
			emit(s, 0, "", "", math.Floor(s.value))
		default:
			emit(s, 0, "", "", f.gauge(s, t))
		}
	}
}

func formatLe(b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// labelsOf returns (and keeps) the labels of sample i of s.
func (s *synth) labelsOf(i int, suffix, le string) labels.Labels {
	if len(s.lsets) <= i {
		s.lsets = append(s.lsets, make([]labels.Labels, i+1-len(s.lsets))...)
		s.refs = append(s.refs, make([]storage.SeriesRef, i+1-len(s.refs))...)
	}
	if s.lsets[i].IsEmpty() {
		b := labels.NewBuilder(s.base)
		b.Set(model.MetricNameLabel, s.name+suffix)
		if le != "" {
			b.Set("le", le)
		}
		s.lsets[i] = b.Labels()
	}
	return s.lsets[i]
}

// backfill writes the fleet's history from its start to end, one sample per
// step, into dir as TSDB blocks of a day each (as Prometheus would have
// compacted them), and returns the number of samples written.
func (f *fleet) backfill(ctx context.Context, dir string, end time.Time, step time.Duration, progress func(day int, samples int64)) (int64, error) {
	const block = 24 * time.Hour
	var total int64
	day := 0
	for from := f.last; from.Before(end); from = from.Add(block) {
		to := from.Add(block)
		if to.After(end) {
			to = end
		}
		n, err := f.writeBlock(ctx, dir, from, to, step)
		total += n
		if err != nil {
			return total, err
		}
		day++
		progress(day, total)
	}
	return total, nil
}

// writeBlock writes the samples of [from, to) as one block.
func (f *fleet) writeBlock(ctx context.Context, dir string, from, to time.Time, step time.Duration) (int64, error) {
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (24 * time.Hour).Milliseconds())
	if err != nil {
		return 0, err
	}
	defer func() { _ = w.Close() }()
	for _, s := range f.series {
		clear(s.refs) // refs are per head
	}
	var n int64
	for t := from; t.Before(to); t = t.Add(step) {
		app := w.Appender(ctx)
		var aerr error
		f.samples(t, func(s *synth, i int, suffix, le string, v float64) {
			if aerr != nil {
				return
			}
			lset := s.labelsOf(i, suffix, le)
			ref, err := app.Append(s.refs[i], lset, t.UnixMilli(), v)
			if err != nil {
				aerr = fmt.Errorf("append %s at %s: %w", lset, t, err)
			}
			s.refs[i] = ref
			n++
		})
		if aerr != nil {
			_ = app.Rollback()
			return n, aerr
		}
		if err := app.Commit(); err != nil {
			return n, err
		}
	}
	if _, err := w.Flush(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// exposition writes the fleet's samples at t as Prometheus text format, the
// live scrape that continues the backfilled history. Recorded series are
// left to the Prometheus that evaluates the rules.
func (f *fleet) exposition(t time.Time) []byte {
	var b bytes.Buffer
	typed := map[string]bool{}
	f.samples(t, func(s *synth, i int, suffix, le string, v float64) {
		if s.recorded {
			return
		}
		if !typed[s.name] {
			typed[s.name] = true
			fmt.Fprintf(&b, "# TYPE %s %s\n", s.name, s.typ)
		}
		b.WriteString(s.name)
		b.WriteString(suffix)
		b.WriteByte('{')
		b.WriteString(s.text)
		if le != "" {
			b.WriteString(`,le="`)
			b.WriteString(le)
			b.WriteByte('"')
		}
		b.WriteString("} ")
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		b.WriteByte('\n')
	})
	return b.Bytes()
}
