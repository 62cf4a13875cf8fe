package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/exporterproc"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// A profile is what a real exporter exposes per watched resource: the
// templates the synthetic fleet copies, so the stored series are the ones a
// user's Prometheus stores, by name, label set and bucket.
type profile struct {
	resources []resourceTemplate // every resource the exporter watched
	plain     []resourceTemplate // those without a canary or convergence tracking: what one more watched resource adds
	other     int                // series without a resource label (the process, the build)
	uptime    time.Duration      // how long the exporter ran before the scrape
}

// resourceTemplate is the exposition of one watched resource.
type resourceTemplate struct {
	resource string
	metrics  []metricTemplate
}

// series counts the resource's series (a classic histogram: its buckets,
// sum and count).
func (t resourceTemplate) series() int {
	n := 0
	for _, m := range t.metrics {
		n += m.series()
	}
	return n
}

// metricTemplate is one family instance: a name, its labels but resource,
// and how it moves.
type metricTemplate struct {
	name   string
	typ    catalog.Type
	labels []labels.Label
	value  float64   // gauge value at the scrape
	rate   float64   // per second over the exporter's uptime: counter increase, histogram observations
	bounds []float64 // histogram upper bounds, +Inf last
	probs  []float64 // histogram: share of observations per bucket
}

func (m metricTemplate) series() int {
	if m.typ == catalog.Histogram {
		return len(m.bounds) + 2
	}
	return 1
}

// perResource is the mean number of series a watched resource adds.
func (p profile) perResource() float64 {
	n := 0
	for _, t := range p.resources {
		n += t.series()
	}
	return float64(n) / float64(len(p.resources))
}

// captureProfile runs the exporter with its defaults (every default
// resource, the canary on) on a real control plane for window, with a few
// writes so every signal has data, and reads its exposition.
func captureProfile(ctx context.Context, window time.Duration, logf func(string, ...any)) (profile, error) {
	env, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		return profile{}, fmt.Errorf("control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	e, err := exporterproc.StartExporter(exporterproc.ExporterOptions{Informer: env.Config, Env: []string{"POD_NAMESPACE=default", "POD_NAME=bench"}})
	if err != nil {
		return profile{}, fmt.Errorf("exporter: %w", err)
	}
	defer func() { _ = e.Stop(10 * time.Second) }()
	started := time.Now()
	logf("profile: the exporter runs on a real control plane for %s", window)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; time.Since(started) < window; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i%20), Namespace: "default"}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := env.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			_, _ = env.Client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
		}
		select {
		case <-ctx.Done():
			return profile{}, ctx.Err()
		case <-tick.C:
		}
	}
	m, err := scrape.Scrape(e.MetricsURL())
	if err != nil {
		return profile{}, err
	}
	return profileOf(m, time.Since(started)), nil
}

// profileOf groups an exposition by resource.
func profileOf(m scrape.Metrics, uptime time.Duration) profile {
	p := profile{uptime: uptime}
	byRes := map[string]*resourceTemplate{}
	for name, fam := range m {
		if !strings.HasPrefix(name, catalog.Namespace+"_") {
			p.other += len(fam.GetMetric())
			continue
		}
		for _, mt := range fam.GetMetric() {
			res := ""
			var ls []labels.Label
			for _, l := range mt.GetLabel() {
				if l.GetName() == catalog.LabelResource {
					res = l.GetValue()
					continue
				}
				ls = append(ls, labels.Label{Name: l.GetName(), Value: l.GetValue()})
			}
			t := templateOf(name, fam.GetType(), mt, ls, uptime)
			if res == "" {
				p.other += t.series()
				continue
			}
			if byRes[res] == nil {
				byRes[res] = &resourceTemplate{resource: res}
			}
			byRes[res].metrics = append(byRes[res].metrics, t)
		}
	}
	for _, t := range byRes {
		slices.SortFunc(t.metrics, func(a, b metricTemplate) int { return strings.Compare(a.name, b.name) })
		p.resources = append(p.resources, *t)
		special := slices.ContainsFunc(t.metrics, func(m metricTemplate) bool {
			return m.name == catalog.CanaryDeliveryLatency.Name || m.name == catalog.GenerationConvergence.Name
		})
		if !special {
			p.plain = append(p.plain, *t)
		}
	}
	byName := func(a, b resourceTemplate) int { return strings.Compare(a.resource, b.resource) }
	slices.SortFunc(p.resources, byName)
	slices.SortFunc(p.plain, byName)
	return p
}

// templateOf makes the template of one scraped metric.
func templateOf(name string, typ dto.MetricType, mt *dto.Metric, ls []labels.Label, uptime time.Duration) metricTemplate {
	up := max(uptime.Seconds(), 1)
	switch typ {
	case dto.MetricType_COUNTER:
		return metricTemplate{name: name, typ: catalog.Counter, labels: ls, rate: mt.GetCounter().GetValue() / up}
	case dto.MetricType_HISTOGRAM:
		h := mt.GetHistogram()
		t := metricTemplate{name: name, typ: catalog.Histogram, labels: ls, rate: float64(h.GetSampleCount()) / up}
		prev := uint64(0)
		for _, b := range h.GetBucket() {
			t.bounds = append(t.bounds, b.GetUpperBound())
			t.probs = append(t.probs, share(b.GetCumulativeCount()-prev, h.GetSampleCount()))
			prev = b.GetCumulativeCount()
		}
		if len(t.bounds) == 0 || !math.IsInf(t.bounds[len(t.bounds)-1], 1) {
			t.bounds = append(t.bounds, math.Inf(1))
			t.probs = append(t.probs, share(h.GetSampleCount()-prev, h.GetSampleCount()))
		}
		if h.GetSampleCount() == 0 {
			t.probs[0] = 1 // no observation yet: none will come, but the buckets are series
		}
		return t
	default:
		return metricTemplate{name: name, typ: catalog.Gauge, labels: ls, value: mt.GetGauge().GetValue()}
	}
}

func share(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}
