package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// quantileWindow is how far back the table's quantiles look: the change of
// each histogram since the scrape about this long ago.
const quantileWindow = 30 * time.Second

// alertState is one alert of Prometheus, pending or firing.
type alertState struct {
	name  string // without the Rvsync prefix
	state string // pending or firing
}

// alertsByResource returns Prometheus' pending and firing alerts by their
// resource label ("" for alerts of the exporter as a whole).
func alertsByResource(ctx context.Context, api promv1.API) (map[string][]alertState, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := api.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]alertState{}
	for _, a := range res.Alerts {
		r := string(a.Labels[catalog.LabelResource])
		name := strings.TrimPrefix(string(a.Labels[model.AlertNameLabel]), "Rvsync")
		s := alertState{name: name, state: string(a.State)}
		if !slices.Contains(out[r], s) { // an SLO's burn-rate windows are one alert name
			out[r] = append(out[r], s)
		}
	}
	for _, as := range out {
		slices.SortFunc(as, func(a, b alertState) int { return strings.Compare(a.name+a.state, b.name+b.state) })
	}
	return out, nil
}

// tableView is what one table shows.
type tableView struct {
	resources []string
	cur       scrape.Metrics // the latest scrape
	base      scrape.Metrics // a scrape about quantileWindow older; nil: none yet
	alerts    map[string][]alertState
	alertsErr error // Prometheus did not answer
}

// printTable writes the signals of every resource, one row each, with
// its alerts beside them. Every cell but the last is one word, so a
// program can read the rows with strings.Fields.
func printTable(w io.Writer, v tableView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resource\tsynced\tRV lag\tstaleness s\tsilence s\tdelivery p99 s\tcanary p99 s\trelists\t  alerts (Prometheus)")
	for _, res := range v.resources {
		r := map[string]string{catalog.LabelResource: res}
		value := func(m catalog.Metric, format string) string {
			if x, ok := v.cur.Value(m.Name, r); ok {
				return fmt.Sprintf(format, x)
			}
			return "-"
		}
		synced := "no"
		if x, _ := v.cur.Value(catalog.InformerSynced.Name, r); x == 1 {
			synced = "yes"
		}
		var notes []string
		for _, a := range v.alerts[res] {
			notes = append(notes, a.name+" "+a.state)
		}
		if s := state(v.cur, res); s != "" && s != catalog.StateOK {
			notes = append(notes, "["+s+"]")
		}
		if len(notes) == 0 {
			notes = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t  %s\n", res, synced,
			value(catalog.ResourceVersionLag, "%.0f"), value(catalog.CacheStaleness, "%.1f"), value(catalog.WatchSilence, "%.1f"),
			v.quantile(catalog.EventDeliveryLag, r, 0.99), v.canary(r),
			v.cur.Sum(catalog.Relists.Name, r), strings.Join(notes, ", "))
	}
	_ = tw.Flush()
	switch {
	case v.alertsErr != nil:
		fmt.Fprintf(w, "alerts: Prometheus did not answer: %v\n", v.alertsErr)
	case len(v.alerts[""]) > 0:
		var notes []string
		for _, a := range v.alerts[""] {
			notes = append(notes, a.name+" "+a.state)
		}
		fmt.Fprintf(w, "exporter alerts: %s\n", strings.Join(notes, ", "))
	}
}

// state returns the state the resource is in, "" when unknown.
func state(m scrape.Metrics, res string) string {
	for _, s := range catalog.States() {
		if x, ok := m.Value(catalog.ResourceState.Name, map[string]string{catalog.LabelResource: res, catalog.LabelState: s}); ok && x == 1 {
			return s
		}
	}
	return ""
}

// quantile renders the q-quantile of a histogram's observations since the
// base scrape ("-" without observations).
func (v tableView) quantile(m catalog.Metric, r map[string]string, q float64) string {
	h, ok := windowHistogram(v.cur, v.base, m.Name, r)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.3f", scrape.Quantile(h, q))
}

// canary renders the canary's p99 delivery latency since the base scrape,
// or how many canaries were lost in that time.
func (v tableView) canary(r map[string]string) string {
	lost := v.cur.Sum(catalog.CanaryLost.Name, r)
	if v.base != nil {
		lost -= v.base.Sum(catalog.CanaryLost.Name, r)
	}
	if lost > 0 {
		return fmt.Sprintf("%.0f-lost", lost)
	}
	return v.quantile(catalog.CanaryDeliveryLatency, r, 0.99)
}

// windowHistogram returns the observations of histogram name (all its
// series matching labels, merged) since base: their difference, or all of
// cur when base has none or more (the exporter restarted). ok is false
// when there are none.
func windowHistogram(cur, base scrape.Metrics, name string, labels map[string]string) (*dto.Histogram, bool) {
	h, ok := cur.MergedHistogram(name, labels)
	if !ok {
		return nil, false
	}
	if base != nil {
		if b, ok := base.MergedHistogram(name, labels); ok && b.GetSampleCount() <= h.GetSampleCount() && len(b.GetBucket()) == len(h.GetBucket()) {
			d := &dto.Histogram{SampleCount: new(uint64), SampleSum: new(float64)}
			*d.SampleCount = h.GetSampleCount() - b.GetSampleCount()
			*d.SampleSum = h.GetSampleSum() - b.GetSampleSum()
			for i, hb := range h.GetBucket() {
				c := hb.GetCumulativeCount() - b.GetBucket()[i].GetCumulativeCount()
				d.Bucket = append(d.Bucket, &dto.Bucket{UpperBound: hb.UpperBound, CumulativeCount: &c})
			}
			h = d
		}
	}
	return h, h.GetSampleCount() > 0
}

// scrapes keeps the recent scrapes of the exporter, to difference
// histograms over quantileWindow.
type scrapes struct {
	at []time.Time
	m  []scrape.Metrics
}

// add records a scrape and returns the latest one at least quantileWindow
// older (nil when there is none yet).
func (s *scrapes) add(at time.Time, m scrape.Metrics) scrape.Metrics {
	s.at, s.m = append(s.at, at), append(s.m, m)
	// keep one scrape older than the window, the base
	for len(s.at) > 2 && at.Sub(s.at[1]) >= quantileWindow {
		s.at, s.m = s.at[1:], s.m[1:]
	}
	if at.Sub(s.at[0]) >= quantileWindow {
		return s.m[0]
	}
	return nil
}
