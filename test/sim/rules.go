package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Firing is one alert as Prometheus fired it on a history's series.
type Firing struct {
	Alert    string
	Resource string // the alert's resource label ("" for alerts about the exporter)
	Severity string
	From, To time.Duration // since the history began; To is when it last fired
	// Description is the alert's description annotation as Prometheus
	// expanded it when it began to fire (what the page says).
	Description string
}

// Page reports whether the alert pages (the spec's page severity).
func (f Firing) Page() bool { return f.Severity == slo.DefaultSeverityPage }

func (f Firing) String() string {
	return fmt.Sprintf("%s{resource=%q, severity=%q} firing %s–%s", f.Alert, f.Resource, f.Severity, f.From.Round(time.Second), f.To.Round(time.Second))
}

// The scrape job and instance the simulated series carry; the shipped
// rules' default up-selector matches the job.
const (
	simJob      = "rvsync-slo"
	simInstance = "sim:8080"
)

// EvaluateRules stores a history's scrapes in a TSDB and evaluates the
// rules alerts.Generate ships for spec on them every interval, from the
// first scrape to the last, as Prometheus would; it returns every alert
// that fired, with when. Series carry job and instance like a scraped
// target's, and `up` is 1 at every scrape.
func EvaluateRules(spec slo.Spec, scrapes []Scrape, interval time.Duration) ([]Firing, error) {
	if len(scrapes) == 0 {
		return nil, nil
	}
	b, err := alerts.Render(spec)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rvsync-sim-rules-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, err
	}
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = int64(24 * time.Hour / time.Millisecond)
	opts.MaxBlockDuration = opts.MinBlockDuration
	opts.RetentionDuration = 0
	db, err := tsdb.Open(filepath.Join(dir, "tsdb"), nil, nil, opts, tsdb.NewDBStats())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := appendScrapes(db, scrapes); err != nil {
		return nil, err
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	ctx := context.Background()
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(engine, db),
		AppendableV2: db,
		Context:      ctx,
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       parser.NewParser(parser.Options{}),
	})
	loaded, errs := m.LoadGroups(interval, labels.EmptyLabels(), "", nil, false, file)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	var gs []*rules.Group
	for _, g := range loaded {
		gs = append(gs, g)
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true)
			}
		}
	}
	// evaluate in the order of the file: recording rules before the alerts
	// that read them
	sort.Slice(gs, func(i, j int) bool {
		return gs[i].GetEvaluationTime() < gs[j].GetEvaluationTime() || gs[i].Name() < gs[j].Name()
	})
	start := scrapes[0].At
	open := map[string]*Firing{}
	var out []Firing
	for ts := start; !ts.After(scrapes[len(scrapes)-1].At); ts = ts.Add(interval) {
		for _, g := range gs {
			g.Eval(ctx, ts)
			for _, r := range g.Rules() {
				if err := r.LastError(); err != nil {
					return nil, fmt.Errorf("rule %s at %v: %w", r.Name(), ts.Sub(start), err)
				}
			}
		}
		seen := map[string]bool{}
		for _, g := range gs {
			for _, r := range g.Rules() {
				ar, ok := r.(*rules.AlertingRule)
				if !ok {
					continue
				}
				for _, a := range ar.ActiveAlerts() {
					if a.State != rules.StateFiring {
						continue
					}
					key := ar.Name() + a.Labels.String()
					seen[key] = true
					if f := open[key]; f != nil {
						f.To = ts.Sub(start)
						continue
					}
					open[key] = &Firing{Alert: ar.Name(), Resource: a.Labels.Get("resource"), Severity: a.Labels.Get("severity"), From: ts.Sub(start), To: ts.Sub(start), Description: a.Annotations.Get("description")}
				}
			}
		}
		for key, f := range open {
			if !seen[key] {
				out = append(out, *f)
				delete(open, key)
			}
		}
	}
	for _, f := range open {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, nil
}

// appendScrapes stores every scrape's samples, as Prometheus stores a
// scraped target's: histograms as _bucket, _sum and _count series.
func appendScrapes(db storage.Appendable, scrapes []Scrape) error {
	app := db.Appender(context.Background())
	for _, s := range scrapes {
		ts := s.At.UnixMilli()
		add := func(name string, v float64, extra []*dto.LabelPair, more ...string) error {
			b := labels.NewScratchBuilder(len(extra) + 4)
			b.Add(model.MetricNameLabel, name)
			b.Add("job", simJob)
			b.Add("instance", simInstance)
			for _, lp := range extra {
				b.Add(lp.GetName(), lp.GetValue())
			}
			for i := 0; i+1 < len(more); i += 2 {
				b.Add(more[i], more[i+1])
			}
			b.Sort()
			_, err := app.Append(0, b.Labels(), ts, v)
			return err
		}
		if err := add("up", 1, nil); err != nil {
			return err
		}
		if err := appendServers(app, ts, s.Servers); err != nil {
			return err
		}
		for _, mf := range s.Families {
			for _, m := range mf.GetMetric() {
				var err error
				switch {
				case m.Gauge != nil:
					err = add(mf.GetName(), m.GetGauge().GetValue(), m.GetLabel())
				case m.Counter != nil:
					err = add(mf.GetName(), m.GetCounter().GetValue(), m.GetLabel())
				case m.Histogram != nil:
					h := m.GetHistogram()
					for _, b := range h.GetBucket() {
						if err = add(mf.GetName()+"_bucket", float64(b.GetCumulativeCount()), m.GetLabel(), "le", formatLe(b.GetUpperBound())); err != nil {
							return err
						}
					}
					if err = add(mf.GetName()+"_bucket", float64(h.GetSampleCount()), m.GetLabel(), "le", "+Inf"); err != nil {
						return err
					}
					if err = add(mf.GetName()+"_sum", h.GetSampleSum(), m.GetLabel()); err != nil {
						return err
					}
					err = add(mf.GetName()+"_count", float64(h.GetSampleCount()), m.GetLabel())
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return app.Commit()
}

// The scrape job of the API servers' own metrics, as kube-prometheus-stack
// names it.
const serverJob = "apiserver"

// appendServers stores what each API server's /metrics said at ts, as
// Prometheus stores a scrape of the job serverJob: up, and each watch
// cache's resource version by group and resource (a down server's scrape
// fails: up 0, nothing else).
func appendServers(app storage.Appender, ts int64, servers []ServerScrape) error {
	for _, ss := range servers {
		up := 0.0
		if ss.Up {
			up = 1
		}
		if _, err := app.Append(0, labels.FromStrings(model.MetricNameLabel, "up", "job", serverJob, "instance", ss.Instance), ts, up); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(ss.CacheRV)) {
			resource, group, _ := strings.Cut(name, ".")
			ls := labels.FromStrings(model.MetricNameLabel, "apiserver_watch_cache_resource_version", "job", serverJob, "instance", ss.Instance, "group", group, "resource", resource)
			if _, err := app.Append(0, ls, ts, float64(ss.CacheRV[name])); err != nil {
				return err
			}
		}
	}
	return nil
}

// formatLe renders a bucket bound as Prometheus 3 stores it ("30.0", "1.5").
func formatLe(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%g", f)
}
