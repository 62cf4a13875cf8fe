package main

import (
	"bufio"
	"bytes"
	"context"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// requestKey is one (verb, resource) series of apiserver_request_total.
type requestKey struct{ verb, resource string }

// requestCounts are apiserver_request_total values summed over codes,
// scopes and versions.
type requestCounts map[requestKey]float64

// scrapeRequests reads apiserver_request_total from the API server's own
// /metrics.
func scrapeRequests(ctx context.Context, c kubernetes.Interface) (requestCounts, error) {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	// Parse only the family we need: the whole text is megabytes.
	const family = "apiserver_request_total"
	var only bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, family+"{") || strings.HasPrefix(line, "# TYPE "+family+" ") {
			only.WriteString(line)
			only.WriteByte('\n')
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(&only)
	if err != nil {
		return nil, err
	}
	out := requestCounts{}
	if f, ok := fams[family]; ok {
		for _, m := range f.GetMetric() {
			var k requestKey
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					k.verb = l.GetValue()
				case "resource":
					k.resource = l.GetValue()
				}
			}
			out[k] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// sub returns c - prev, keeping only what keep accepts.
func (c requestCounts) sub(prev requestCounts, keep func(requestKey) bool) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - prev[k]; d > 0 && keep(k) {
			out[k] = d
		}
	}
	return out
}

// byVerb sums the counts per verb.
func (c requestCounts) byVerb() map[string]float64 {
	out := map[string]float64{}
	for k, v := range c {
		out[k.verb] += v
	}
	return out
}
