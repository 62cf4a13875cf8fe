package slo

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Kind says how an SLO's error ratio is computed.
type Kind string

const (
	// EventRatio SLIs count bad events over all events from a histogram:
	// 1 - (count of events <= threshold) / (count of events).
	EventRatio Kind = "event-ratio"
	// TimeSlice SLIs count bad time slices: a slice is bad when the
	// signal's minimum over a window longer than the bookmark period exceeds
	// the threshold, so a quiet resource's bookmark sawtooth never burns budget.
	TimeSlice Kind = "time-slice"
)

// Alert severities. Burn-rate windows and symptom alerts use one of them.
const (
	SeverityPage   = "page"   // wake someone up
	SeverityTicket = "ticket" // handle in working hours
)

// Labels that the rule generator sets on alerts, reserved in ExtraLabels.
const (
	LabelSeverity    = "severity"
	LabelLongWindow  = "long_window"
	LabelShortWindow = "short_window"
)

// Severities lists the known severities.
func Severities() []string { return []string{SeverityPage, SeverityTicket} }

// Default values of the severity label: kube-prometheus-stack's and
// kubernetes-mixin's, which their Alertmanager configs route and inhibit on.
const (
	DefaultSeverityPage   = "critical"
	DefaultSeverityTicket = "warning"
)

// SeverityLabels are the values the alerts' severity label takes for each
// of the two urgencies (SeverityPage, SeverityTicket), so that the alerts
// route with the rest of an Alertmanager's.
type SeverityLabels struct {
	Page   string `json:"page,omitempty"`   // default DefaultSeverityPage
	Ticket string `json:"ticket,omitempty"` // default DefaultSeverityTicket
}

// SeverityLabel returns the severity label value of an urgency
// (SeverityPage or SeverityTicket) under s.Severities.
func (s Spec) SeverityLabel(urgency string) string {
	if urgency == SeverityPage {
		return cmp.Or(s.Severities.Page, DefaultSeverityPage)
	}
	return cmp.Or(s.Severities.Ticket, DefaultSeverityTicket)
}

// SLO is one service-level objective, evaluated per resource.
type SLO struct {
	Name      string  `json:"name"`      // one of Names()
	Objective float64 `json:"objective"` // e.g. 0.99; the error budget is 1 - Objective
	Threshold float64 `json:"threshold"` // seconds or revisions, in the unit of the SLI's metric
	Kind      Kind    `json:"kind"`
	Disabled  bool    `json:"disabled,omitempty"`
}

// BurnWindow is one row of the multi-window multi-burn-rate table: alert when
// the error ratio over both Long and Short exceeds Factor × the budget rate.
type BurnWindow struct {
	Long     string  `json:"long"`     // Prometheus duration, e.g. 1h
	Short    string  `json:"short"`    // e.g. 5m
	Factor   float64 `json:"factor"`   // burn-rate factor, e.g. 14.4
	Severity string  `json:"severity"` // page or ticket
}

// Symptoms holds the thresholds of the symptom alerts, which catch what the
// SLOs cannot see (a dead exporter, a stalled watch before it burns budget).
type Symptoms struct {
	// StalledAfterSeconds: a watch is stalled when it has delivered nothing
	// (no event, no bookmark) for this long and for more than three of its
	// measured bookmark periods, for StalledFor. A live watch delivers a
	// bookmark every period (~60 s), whatever etcd's progress-notify
	// interval. Default 180.
	StalledAfterSeconds float64 `json:"stalledAfterSeconds"`
	// StalledFor is the `for` of the watch-stalled alert. Default 2m.
	StalledFor string `json:"stalledFor"`
	// NotSyncedFor is how long an informer may stay unsynced. Default 10m.
	NotSyncedFor string `json:"notSyncedFor"`
	// ErrorsFor is how long List, head-probe or canary-write errors must
	// keep coming before their ticket. Default 15m.
	ErrorsFor string `json:"errorsFor,omitempty"`
	// RelistsPerHour: more expired (410 Gone) relists per hour than this is a
	// relist storm. Default 12.
	RelistsPerHour float64 `json:"relistsPerHour"`
	// QueueDepthLimit: an informer whose queue holds more deltas than this
	// (received on the wire, not yet applied to its store) for
	// BackpressureFor is under backpressure. Default 1000, the seeds'
	// DeltaFIFO limit.
	QueueDepthLimit float64 `json:"queueDepthLimit,omitempty"`
	// BackpressureFor is the `for` of the backpressure alert. Default 10m.
	BackpressureFor string `json:"backpressureFor,omitempty"`
}

// Spec is everything the rule and dashboard generators need to know.
type Spec struct {
	// Selector holds PromQL label matchers (without braces) that select the
	// exporter's series, e.g. `job="rvsync-slo"`. Empty selects every
	// rvsync series, which also covers operators embedding pkg/probe.
	Selector string `json:"selector"`
	// UpSelector holds the label matchers (without braces) that select the
	// exporter's scrape targets in `up` for the exporter down/absent alerts.
	// Defaults to Selector, or DefaultUpSelector when Selector is empty
	// (a bare `up` would match every target of the Prometheus).
	UpSelector string `json:"upSelector,omitempty"`
	// ClusterLabel is the label that tells clusters apart in a multi-cluster
	// store; every aggregation keeps it.
	ClusterLabel string `json:"clusterLabel"`
	// RunbookURLPrefix + lower-cased alert name is each alert's runbook_url.
	RunbookURLPrefix string `json:"runbookURLPrefix"`
	// ExtraLabels are added to every alert (e.g. team routing).
	ExtraLabels map[string]string `json:"extraLabels,omitempty"`
	// BudgetPeriod is the error-budget period, e.g. 30d.
	BudgetPeriod string `json:"budgetPeriod"`
	// Windows is the burn-rate window table.
	Windows []BurnWindow `json:"windows"`
	// SLOs are the objectives, by name.
	SLOs []SLO `json:"slos"`
	// SliceWindow is the min_over_time window of time-slice SLIs. It must be
	// longer than the API server's watch bookmark period (~60 s) so that the
	// minimum of a quiet resource's staleness sawtooth is taken right after a
	// bookmark. Default 2m.
	SliceWindow string `json:"sliceWindow,omitempty"`
	// MinCoverage is the share of a burn-rate alert's long window that must
	// hold the resource's data before the alert may fire (see Covered), in
	// (0, 1]. Default 0.5: the 1h/5m page needs 30 minutes of history.
	MinCoverage float64 `json:"minCoverage,omitempty"`
	// WindowScale multiplies every burn-rate window and the budget period
	// (not their recording-rule names, nor SliceWindow or symptom durations,
	// which follow the API server's clock). 0 means 1. End-to-end tests set
	// it with ScaledWindows so burn-rate alerts fire within minutes.
	WindowScale float64 `json:"windowScale,omitempty"`
	// Symptoms are the symptom alerts' thresholds.
	Symptoms Symptoms `json:"symptoms,omitzero"`
	// Severities are the severity label values of pages and tickets;
	// default critical and warning.
	Severities SeverityLabels `json:"severities,omitzero"`
	// GrafanaURL is the base URL of the Grafana serving the dashboards
	// (e.g. https://grafana.example.com); each alert's dashboard_url is it
	// plus the path of the dashboard and resource the alert is about. Empty:
	// the path alone.
	GrafanaURL string `json:"grafanaURL,omitempty"`
	// ExtraAnnotations are added to every alert beside summary,
	// description, runbook_url and dashboard_url (which they may not
	// replace).
	ExtraAnnotations map[string]string `json:"extraAnnotations,omitempty"`
	// DisabledAlerts names alerts (e.g. RvsyncRelistStorm) that the rules
	// leave out; a burn-rate alert's name drops its four windows. The
	// recording rules stay.
	DisabledAlerts []string `json:"disabledAlerts,omitempty"`
	// AlertNamespace, when set, is the `namespace` label of every alert:
	// the exporter's namespace, a real one. kube-prometheus-stack's
	// default Alertmanager groups notifications by namespace alone, so a
	// fault that hits every resource is one notification, and routing by
	// namespace ownership (and the Prometheus Operator's AlertmanagerConfig,
	// which routes only alerts of its own namespace) sees the namespace
	// that runs the exporter. Its inhibition (critical over warning, equal
	// namespace and alertname) then lets a page mute its own resource's
	// tickets of the same alert, and also other resources' (the trade-off
	// the README states); the project's own routing (RoutingOf) inhibits
	// by cluster and resource.
	AlertNamespace string `json:"alertNamespace,omitempty"`
	// APIServerJob is the job label of the API servers' own scrape, whose
	// watch-cache and dispatch metrics the stage rules (StageRecords)
	// join with the exporter's signals to say where a delay is; default
	// DefaultAPIServerJob, kube-prometheus-stack's. Without such series the
	// stage rules name no stage and every alert reads as without them.
	APIServerJob string `json:"apiServerJob,omitempty"`
	// DashboardUIDPrefix starts the UIDs of the dashboards that each
	// alert's dashboard_url opens (dashboards.Config.UIDPrefix); default
	// DefaultDashboardUIDPrefix.
	DashboardUIDPrefix string `json:"dashboardUIDPrefix,omitempty"`
}

// ExtraAnnotations may not replace the generator's own annotations.
var reservedAnnotations = []string{"summary", "description", "runbook_url", "dashboard_url"}

// LabelNamespace is the label AlertNamespace sets.
const LabelNamespace = "namespace"

// DefaultRunbookURLPrefix points at docs/runbooks.md in the repository.
const DefaultRunbookURLPrefix = "https://github.com/rvsync-slo/rvsync-slo/blob/main/docs/runbooks.md#"

// DefaultUpSelector selects the exporter's targets in `up` when neither
// UpSelector nor Selector is set: the chart's job names contain "rvsync".
const DefaultUpSelector = `job=~".*rvsync.*"`

// DefaultSpec returns the SLOs and windows of the design: List latency
// <= 1.5 s for 95 % of Lists, canary delivery <= 30 s for 99 %, cache
// staleness <= 30 s and RV lag <= 500 revisions as time slices, with the
// four-window table of the SRE workbook over a 30-day budget.
func DefaultSpec() Spec {
	return Spec{
		ClusterLabel:     "cluster",
		RunbookURLPrefix: DefaultRunbookURLPrefix,
		BudgetPeriod:     "30d",
		Windows: []BurnWindow{
			{Long: "1h", Short: "5m", Factor: 14.4, Severity: SeverityPage},
			{Long: "6h", Short: "30m", Factor: 6, Severity: SeverityPage},
			{Long: "1d", Short: "2h", Factor: 3, Severity: SeverityTicket},
			{Long: "3d", Short: "6h", Factor: 1, Severity: SeverityTicket},
		},
		SLOs: []SLO{
			{Name: ListLatency, Objective: 0.95, Threshold: DefaultListLatencyThresholdSeconds, Kind: EventRatio},
			{Name: CanaryDelivery, Objective: 0.99, Threshold: DefaultCanaryLatencyThresholdSeconds, Kind: EventRatio},
			{Name: CacheStaleness, Objective: 0.99, Threshold: DefaultStalenessThresholdSeconds, Kind: TimeSlice},
			{Name: RVLag, Objective: 0.99, Threshold: DefaultRVLagThresholdRevisions, Kind: TimeSlice},
			{Name: StaleReads, Objective: DefaultStaleReadsObjective, Kind: EventRatio},
		},
		SliceWindow: "2m",
		MinCoverage: 0.5,
		Symptoms:    defaultSymptoms(),
	}
}

func defaultSymptoms() Symptoms {
	return Symptoms{StalledAfterSeconds: 180, StalledFor: "2m", NotSyncedFor: "10m", ErrorsFor: "15m", RelistsPerHour: 12,
		QueueDepthLimit: DefaultQueueDepthLimit, BackpressureFor: "10m"}
}

// ScaledWindows returns a copy of s whose burn-rate windows and budget period
// are multiplied by factor (e.g. 1.0/60 turns 1h into 1m), for end-to-end
// tests that must see burn-rate alerts fire within minutes. Rule names keep
// the nominal windows. Pick factor so the shortest scaled window still holds
// several scrapes.
func (s Spec) ScaledWindows(factor float64) Spec {
	s.WindowScale = factor
	return s
}

// SLO returns the named SLO.
func (s Spec) SLO(name string) (SLO, error) {
	for _, o := range s.SLOs {
		if o.Name == name {
			return o, nil
		}
	}
	return SLO{}, fmt.Errorf("no SLO named %q", name)
}

// WithDefaults returns s with every zero field taken from DefaultSpec, and
// each SLO's zero Kind, Objective or Threshold from the default SLO of that
// name. The rule and dashboard generators both read a spec through it.
func (s Spec) WithDefaults() Spec {
	def := DefaultSpec()
	if s.ClusterLabel == "" {
		s.ClusterLabel = def.ClusterLabel
	}
	if s.RunbookURLPrefix == "" {
		s.RunbookURLPrefix = def.RunbookURLPrefix
	}
	if s.UpSelector == "" {
		s.UpSelector = cmp.Or(s.Selector, DefaultUpSelector)
	}
	if s.BudgetPeriod == "" {
		s.BudgetPeriod = def.BudgetPeriod
	}
	if len(s.Windows) == 0 {
		s.Windows = def.Windows
	}
	if s.SLOs == nil {
		s.SLOs = def.SLOs
	}
	s.SLOs = slices.Clone(s.SLOs)
	for i, o := range s.SLOs {
		d, err := def.SLO(o.Name)
		if err != nil {
			continue // Validate reports it
		}
		if o.Kind == "" {
			o.Kind = d.Kind
		}
		if o.Objective == 0 {
			o.Objective = d.Objective
		}
		if o.Threshold == 0 {
			o.Threshold = d.Threshold
		}
		s.SLOs[i] = o
	}
	if s.SliceWindow == "" {
		s.SliceWindow = def.SliceWindow
	}
	if s.WindowScale == 0 {
		s.WindowScale = 1
	}
	if s.MinCoverage == 0 {
		s.MinCoverage = def.MinCoverage
	}
	ds := defaultSymptoms()
	if s.Symptoms.StalledAfterSeconds == 0 {
		s.Symptoms.StalledAfterSeconds = ds.StalledAfterSeconds
	}
	if s.Symptoms.StalledFor == "" {
		s.Symptoms.StalledFor = ds.StalledFor
	}
	if s.Symptoms.NotSyncedFor == "" {
		s.Symptoms.NotSyncedFor = ds.NotSyncedFor
	}
	s.Symptoms.ErrorsFor = cmp.Or(s.Symptoms.ErrorsFor, ds.ErrorsFor)
	if s.Symptoms.RelistsPerHour == 0 {
		s.Symptoms.RelistsPerHour = ds.RelistsPerHour
	}
	s.Severities = SeverityLabels{Page: s.SeverityLabel(SeverityPage), Ticket: s.SeverityLabel(SeverityTicket)}
	if s.Symptoms.QueueDepthLimit == 0 {
		s.Symptoms.QueueDepthLimit = ds.QueueDepthLimit
	}
	s.Symptoms.BackpressureFor = cmp.Or(s.Symptoms.BackpressureFor, ds.BackpressureFor)
	s.APIServerJob = cmp.Or(s.APIServerJob, DefaultAPIServerJob)
	return s
}

// reservedLabels are set by the generator and cannot be ExtraLabels.
var reservedLabels = []string{model.AlertNameLabel, LabelSeverity, LabelSLO, catalog.LabelResource, LabelLongWindow, LabelShortWindow}

// reservedWithNamespace are reserved when AlertNamespace sets the namespace label.
var reservedWithNamespace = append(slices.Clone(reservedLabels), LabelNamespace)

// Validate reports every problem of s (after defaults are filled) in one error.
func (s Spec) Validate() error {
	s = s.WithDefaults()
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	for _, f := range [][2]string{{"selector", s.Selector}, {"upSelector", s.UpSelector}} {
		field, sel := f[0], f[1]
		if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector("up{" + sel + "}"); err != nil {
			add("%s %q is not a list of PromQL label matchers: %v", field, sel, err)
		}
	}
	if !labelName.MatchString(s.ClusterLabel) {
		add("clusterLabel %q is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)", s.ClusterLabel)
	}
	for _, k := range slices.Sorted(maps.Keys(s.ExtraLabels)) {
		v := s.ExtraLabels[k]
		switch {
		case !labelName.MatchString(k):
			add("extraLabels: %q is not a valid label name", k)
		case slices.Contains(reservedLabels, k) || (s.AlertNamespace != "" && slices.Contains(reservedWithNamespace, k)):
			add("extraLabels: %q is set by the generator", k)
		case v == "":
			add("extraLabels: %q has an empty value", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.ExtraAnnotations)) {
		if slices.Contains(reservedAnnotations, k) {
			add("extraAnnotations: %q is set by the generator", k)
		}
	}
	if s.WindowScale < 0 || math.IsNaN(s.WindowScale) || math.IsInf(s.WindowScale, 0) {
		add("windowScale %v must be positive", s.WindowScale)
	}
	if !(s.MinCoverage > 0 && s.MinCoverage <= 1) {
		add("minCoverage %v must be in (0, 1], e.g. 0.5", s.MinCoverage)
	}
	if d, err := model.ParseDuration(s.SliceWindow); err != nil {
		add("sliceWindow: %v", err)
	} else if time.Duration(d) <= bookmarkPeriod {
		add("sliceWindow %s must be longer than the API server's bookmark period (%s), or quiet resources burn budget", s.SliceWindow, bookmarkPeriod)
	}
	for _, f := range [][2]string{{"symptoms.stalledFor", s.Symptoms.StalledFor}, {"symptoms.notSyncedFor", s.Symptoms.NotSyncedFor}, {"symptoms.errorsFor", s.Symptoms.ErrorsFor}, {"symptoms.backpressureFor", s.Symptoms.BackpressureFor}} {
		if _, err := model.ParseDuration(f[1]); err != nil {
			add("%s: %v", f[0], err)
		}
	}
	if s.Symptoms.StalledAfterSeconds < 2*bookmarkPeriod.Seconds() {
		add("symptoms.stalledAfterSeconds %v must span several bookmark periods (>= %v)", s.Symptoms.StalledAfterSeconds, 2*bookmarkPeriod.Seconds())
	}
	if !(s.Symptoms.RelistsPerHour > 0) {
		add("symptoms.relistsPerHour %v must be positive", s.Symptoms.RelistsPerHour)
	}
	if s.Severities.Page == s.Severities.Ticket {
		add("severities: page and ticket are both %q, so no route can tell pages from tickets", s.Severities.Page)
	}
	if strings.ContainsAny(s.GrafanaURL, " \t\n\"{}") {
		add("grafanaURL %q: want a URL such as https://grafana.example.com", s.GrafanaURL)
	}
	if !(s.Symptoms.QueueDepthLimit > 0) {
		add("symptoms.queueDepthLimit %v must be positive, e.g. %v", s.Symptoms.QueueDepthLimit, DefaultQueueDepthLimit)
	}

	windowOK := func(field, w string) {
		if _, err := model.ParseDuration(w); err != nil {
			add("%s: %v", field, err)
		} else if !ruleNameSuffix.MatchString(w) {
			add("%s %q cannot be part of a recording-rule name (want e.g. 5m, 1h30m, 30d)", field, w)
		}
	}
	windowOK("budgetPeriod", s.BudgetPeriod)
	budget, _ := model.ParseDuration(s.BudgetPeriod)
	for i, w := range s.Windows {
		at := fmt.Sprintf("windows[%d]", i)
		windowOK(at+".long", w.Long)
		windowOK(at+".short", w.Short)
		long, _ := model.ParseDuration(w.Long)
		short, _ := model.ParseDuration(w.Short)
		if short >= long {
			add("%s: short window %s must be shorter than long window %s", at, w.Short, w.Long)
		}
		if long > budget {
			add("%s: long window %s exceeds the budget period %s", at, w.Long, s.BudgetPeriod)
		}
		if !(w.Factor > 0) {
			add("%s: factor %v must be positive", at, w.Factor)
		}
		if !slices.Contains(Severities(), w.Severity) {
			add("%s: severity %q is not one of %v", at, w.Severity, Severities())
		}
	}

	seen := map[string]bool{}
	for i, o := range s.SLOs {
		at := fmt.Sprintf("slos[%d] (%s)", i, o.Name)
		def, known := slis[o.Name]
		if !known {
			add("%s: unknown SLO name, want one of %v", at, Names())
			continue
		}
		if seen[o.Name] {
			add("%s: declared twice", at)
		}
		seen[o.Name] = true
		if !(o.Objective > 0 && o.Objective < 1) {
			add("%s: objective %v must be in (0, 1), e.g. 0.99", at, o.Objective)
		}
		switch {
		case !def.Thresholded() && o.Threshold != 0:
			add("%s: threshold %v set, but this SLO has none (its objective alone says which share of events may be bad): remove it", at, o.Threshold)
		case !def.Thresholded():
		case !(o.Threshold > 0) || math.IsInf(o.Threshold, 0):
			add("%s: threshold %v must be positive", at, o.Threshold)
		}
		if o.Kind != def.Kind {
			add("%s: kind %q, but this SLO is a %s SLI", at, o.Kind, def.Kind)
		}
		if def.Kind == EventRatio && def.Thresholded() && !slices.Contains(def.Good.Buckets, o.Threshold) {
			add("%s: threshold %v is not a bucket of %s (buckets %v), so good events cannot be counted", at, o.Threshold, def.Good.Name, def.Good.Buckets)
		}
	}
	return errors.Join(errs...)
}

// bookmarkPeriod is the API server's watch bookmark period: the longest a
// quiet resource's informer goes without a resource-version update.
const bookmarkPeriod = time.Minute

// labelName is a legacy Prometheus label name, usable unquoted in PromQL and
// as $labels.<name> in alert templates.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ruleNameSuffix is what a window may look like to end a recording-rule name.
var ruleNameSuffix = regexp.MustCompile(`^[0-9a-z]+$`)

// RecordedWindows are the windows of the burn-rate table, shortest first,
// without the budget period (recorded apart). Call it on a validated spec.
func (s Spec) RecordedWindows() []string {
	var ws []string
	for _, w := range s.Windows {
		ws = append(ws, w.Long, w.Short)
	}
	ws = slices.DeleteFunc(ws, func(w string) bool { return w == s.BudgetPeriod })
	slices.SortFunc(ws, func(a, b string) int { return cmp.Compare(mustDuration(a), mustDuration(b)) })
	return slices.Compact(ws)
}

// Scaled returns the PromQL range of a nominal window under WindowScale.
func (s Spec) Scaled(window string) string {
	if s.windowScale() == 1 {
		return window
	}
	d := time.Duration(float64(mustDuration(window)) * s.WindowScale).Round(time.Second)
	return model.Duration(max(d, time.Second)).String()
}

func (s Spec) windowScale() float64 {
	if s.WindowScale == 0 {
		return 1
	}
	return s.WindowScale
}

// mustDuration parses a duration that Validate has checked.
func mustDuration(d string) time.Duration {
	v, err := model.ParseDuration(d)
	if err != nil {
		panic(fmt.Sprintf("unvalidated duration %q: %v", d, err))
	}
	return time.Duration(v)
}
