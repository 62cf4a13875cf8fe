package scrape

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a /metrics endpoint.
type Metrics map[string]*dto.MetricFamily

// Scrape GETs url (e.g. http://127.0.0.1:8080/metrics) and parses it.
func Scrape(url string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// A new connection per scrape: callers poll until a target answers, and a
	// kept-alive connection keeps the path it was dialled on (a ClusterIP
	// dialled before kube-proxy's rule existed stays with the default route).
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// Families parses the named families out of an exposition (raw, the text
// of a /metrics), skipping every other line first: a kube-apiserver's is
// megabytes. A family raw lacks is absent from the result.
func Families(raw []byte, names ...string) (Metrics, error) {
	var only bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		for _, name := range names {
			if bytes.HasPrefix(line, []byte(name+"{")) || bytes.HasPrefix(line, []byte(name+" ")) ||
				bytes.HasPrefix(line, []byte("# TYPE "+name+" ")) {
				only.Write(line)
				only.WriteByte('\n')
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(&only)
}

// find returns the metric of family name whose labels include all of labels.
func (m Metrics) find(name string, labels map[string]string) (*dto.Metric, bool) {
	fam, ok := m[name]
	if !ok {
		return nil, false
	}
	for _, mt := range fam.GetMetric() {
		if matches(mt, labels) {
			return mt, true
		}
	}
	return nil, false
}

func matches(mt *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, lp := range mt.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Value returns the value of a gauge or counter series.
func (m Metrics) Value(name string, labels map[string]string) (float64, bool) {
	mt, ok := m.find(name, labels)
	if !ok {
		return 0, false
	}
	switch {
	case mt.Gauge != nil:
		return mt.Gauge.GetValue(), true
	case mt.Counter != nil:
		return mt.Counter.GetValue(), true
	case mt.Untyped != nil:
		return mt.Untyped.GetValue(), true
	}
	return 0, false
}

// LabelValue returns label's value on the series of family name that
// matches labels and is set (its value not 0): the state a one-hot family
// such as rvsync_resource_state says, or what an info series names.
func (m Metrics) LabelValue(name string, labels map[string]string, label string) (string, bool) {
	for _, mt := range m[name].GetMetric() {
		if !matches(mt, labels) || mt.GetGauge().GetValue()+mt.GetCounter().GetValue()+mt.GetUntyped().GetValue() == 0 {
			continue
		}
		for _, lp := range mt.GetLabel() {
			if lp.GetName() == label {
				return lp.GetValue(), true
			}
		}
	}
	return "", false
}

// Sum adds the values of every gauge or counter series of name matching labels.
func (m Metrics) Sum(name string, labels map[string]string) float64 {
	total := 0.0
	if fam, ok := m[name]; ok {
		for _, mt := range fam.GetMetric() {
			if matches(mt, labels) {
				total += mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			}
		}
	}
	return total
}

// Histogram returns the histogram series of name matching labels.
func (m Metrics) Histogram(name string, labels map[string]string) (*dto.Histogram, bool) {
	mt, ok := m.find(name, labels)
	if !ok || mt.Histogram == nil {
		return nil, false
	}
	return mt.Histogram, true
}

// CountBelow returns how many observations of h were <= le (le must be a
// bucket bound).
func CountBelow(h *dto.Histogram, le float64) (uint64, bool) {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount(), true
		}
	}
	return 0, false
}

// Quantile estimates the q-quantile of h by linear interpolation inside its
// bucket, as PromQL's histogram_quantile does.
func Quantile(h *dto.Histogram, q float64) float64 {
	total := h.GetSampleCount()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	prevBound, prevCount := 0.0, uint64(0)
	for _, b := range h.GetBucket() {
		if float64(b.GetCumulativeCount()) >= rank {
			inBucket := float64(b.GetCumulativeCount() - prevCount)
			if inBucket == 0 {
				return b.GetUpperBound()
			}
			return prevBound + (b.GetUpperBound()-prevBound)*(rank-float64(prevCount))/inBucket
		}
		prevBound, prevCount = b.GetUpperBound(), b.GetCumulativeCount()
	}
	return prevBound
}

// MergedHistogram adds up every histogram series of name matching labels
// (e.g. all kinds and results of one resource) into one.
func (m Metrics) MergedHistogram(name string, labels map[string]string) (*dto.Histogram, bool) {
	fam, ok := m[name]
	if !ok {
		return nil, false
	}
	var merged *dto.Histogram
	for _, mt := range fam.GetMetric() {
		h := mt.GetHistogram()
		if h == nil || !matches(mt, labels) {
			continue
		}
		if merged == nil {
			merged = &dto.Histogram{SampleCount: new(uint64), SampleSum: new(float64)}
			for _, b := range h.GetBucket() {
				merged.Bucket = append(merged.Bucket, &dto.Bucket{UpperBound: b.UpperBound, CumulativeCount: new(uint64)})
			}
		}
		*merged.SampleCount += h.GetSampleCount()
		*merged.SampleSum += h.GetSampleSum()
		for i, b := range h.GetBucket() {
			if i < len(merged.Bucket) {
				*merged.Bucket[i].CumulativeCount += b.GetCumulativeCount()
			}
		}
	}
	return merged, merged != nil
}

// Gather collects g (a registry) in-process, as a scrape would.
func Gather(g interface {
	Gather() ([]*dto.MetricFamily, error)
}) (Metrics, error) {
	fams, err := g.Gather()
	if err != nil {
		return nil, err
	}
	m := Metrics{}
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m, nil
}
