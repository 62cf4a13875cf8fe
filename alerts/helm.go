package alerts

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/rvsync-slo/rvsync-slo/internal/promql"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// HelmSLO ties an SLO of the spec to its block in the chart's values:
// .Values.slo.<Key>.{enabled, objective, <ThresholdKey>} (no ThresholdKey
// for an SLO without a threshold).
type HelmSLO struct {
	Name         string // SLO name, one of slo.Names()
	Key          string // values key under .Values.slo
	ThresholdKey string // key of the threshold in that block (its unit in the name), "" for none
	// Condition, when set, is an extra template condition for the SLO's
	// rules (the canary SLO needs the canary).
	Condition string

	sentinelThreshold float64
	sentinelObjective float64
}

// HelmSLOs lists the SLOs of the chart's values, in slo.Names() order.
// Event-ratio sentinels are bucket bounds (slo.Spec.Validate insists);
// all sentinels are numbers that occur nowhere else in the rules.
var HelmSLOs = []HelmSLO{
	{Name: slo.ListLatency, Key: "listLatency", ThresholdKey: "thresholdSeconds", sentinelThreshold: 0.025, sentinelObjective: 0.9111},
	{Name: slo.CanaryDelivery, Key: "canaryDelivery", ThresholdKey: "thresholdSeconds", Condition: "$.Values.canary.enabled", sentinelThreshold: 0.01, sentinelObjective: 0.9222},
	{Name: slo.CacheStaleness, Key: "cacheStaleness", ThresholdKey: "thresholdSeconds", sentinelThreshold: 7777, sentinelObjective: 0.9333},
	{Name: slo.RVLag, Key: "rvLag", ThresholdKey: "thresholdRevisions", sentinelThreshold: 8888, sentinelObjective: 0.9444},
	{Name: slo.StaleReads, Key: "staleReads", sentinelObjective: 0.9555}, // no threshold: it counts bad events
}

// Sentinels of the settings that are not per SLO. Each is valid where it
// stands (a label matcher, a label name, a duration) and unique in the output.
const (
	sentinelSelector   = `_rvsync_selector="1"` // sorts before every other matcher
	sentinelUpSelector = `_rvsync_up="1"`
	sentinelCluster    = "rvsync_sentinel_cluster"
	sentinelRunbook    = "https://rvsync-sentinel.invalid/runbooks#"
	sentinelExtraKey   = "rvsync_sentinel_extra"
	sentinelExtraValue = "x"
	sentinelStalledFor = "7h7m"
	sentinelNotSynced  = "8h8m"
	sentinelErrorsFor  = "9h9m"
	sentinelStalledSec = 6666
	sentinelRelists    = 5555
	sentinelPage       = "rvsync_sentinel_page"
	sentinelTicket     = "rvsync_sentinel_ticket"
	sentinelGrafana    = "https://rvsync-grafana.invalid"
	sentinelQueueDepth = 4444
	sentinelBackpress  = "6h6m"
	sentinelBudget     = "347d" // < 1y and no whole number of weeks: PromQL prints it as it is
	sentinelUIDPrefix  = "rvsyncsentineluid-"
	sentinelNamespace  = "rvsync-sentinel-namespace"
	sentinelAnnotation = "rvsync_sentinel_annotation"
	sentinelAPIServer  = "rvsync-sentinel-apiserver-job"
)

// sentinelSpec is slo.DefaultSpec with a sentinel wherever the chart's
// values decide.
func sentinelSpec() slo.Spec {
	s := slo.DefaultSpec()
	s.Selector = sentinelSelector
	s.UpSelector = sentinelUpSelector
	s.ClusterLabel = sentinelCluster
	s.RunbookURLPrefix = sentinelRunbook
	s.ExtraLabels = map[string]string{sentinelExtraKey: sentinelExtraValue}
	s.Symptoms.StalledFor = sentinelStalledFor
	s.Symptoms.NotSyncedFor = sentinelNotSynced
	s.Symptoms.ErrorsFor = sentinelErrorsFor
	s.Symptoms.StalledAfterSeconds = sentinelStalledSec
	s.Symptoms.RelistsPerHour = sentinelRelists
	s.Severities = slo.SeverityLabels{Page: sentinelPage, Ticket: sentinelTicket}
	s.GrafanaURL = sentinelGrafana
	s.Symptoms.QueueDepthLimit = sentinelQueueDepth
	s.Symptoms.BackpressureFor = sentinelBackpress
	s.BudgetPeriod = sentinelBudget
	s.DashboardUIDPrefix = sentinelUIDPrefix
	s.AlertNamespace = sentinelNamespace
	s.ExtraAnnotations = map[string]string{sentinelAnnotation: sentinelExtraValue}
	s.APIServerJob = sentinelAPIServer
	for i, o := range s.SLOs {
		for _, c := range HelmSLOs {
			if c.Name == o.Name {
				s.SLOs[i].Threshold, s.SLOs[i].Objective = c.sentinelThreshold, c.sentinelObjective
			}
		}
	}
	return s
}

// replacement turns every occurrence of a sentinel into a template action.
type replacement struct {
	sentinel, action string
	bounded          func(prev, next string) bool // nil: replace anywhere
}

// RenderHelmTemplate returns the rule file as a Helm template that the chart
// renders with `tpl`, so one values change moves the rules of the
// PrometheusRule and of the rules ConfigMap together: the groups of
// Generate over sentinelSpec, each SLO group guarded by its enabled
// value, with Prometheus' own `{{` escaped and every sentinel replaced by
// the value expression it stands for.
func RenderHelmTemplate() ([]byte, error) {
	groups, err := Generate(sentinelSpec())
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(chartRulesHeader())
	b.WriteString("groups:\n")
	for _, g := range groups.Groups {
		text, err := groupYAML(g)
		if err != nil {
			return nil, err
		}
		// Prometheus' own template actions ({{ $labels.resource }}) pass through Helm verbatim
		text = strings.ReplaceAll(text, "{{", `{{ "{{" }}`)
		text = disableableAlerts(text)
		cond := groupCondition(g.Name)
		if cond != "" {
			b.WriteString("{{- if " + cond + " }}\n")
		}
		b.WriteString(text)
		if cond != "" {
			b.WriteString("{{- end }}\n")
		}
	}
	return substitute(b.String())
}

// chartRulesHeader says what the file is and binds the values it reads.
func chartRulesHeader() string {
	return `{{- /*
` + strings.TrimPrefix(strings.TrimSpace(Header), "# ") + `
The rules of alerts.Render as a Helm template, rendered by the chart with tpl:
.Values.slo and .Values.cluster.label set thresholds, objectives, selectors,
the cluster label, severities, the runbook prefix, the Grafana URL, extra
alert labels and the API servers' job; the chart's
helpers derive the up selector and the alert labels from the release.
*/ -}}
{{- $s := .Values.slo }}
{{- $cl := .Values.cluster.label }}
{{- $selOnly := ternary (printf "{%s}" $s.selector) "" (ne $s.selector "") }}
{{- $selFirst := ternary (printf "{%s," $s.selector) "{" (ne $s.selector "") }}
{{- $up := include "rvsync-slo.upSelector" . }}
{{- $labels := include "rvsync-slo.alertLabels" . }}
{{- $runbook := include "rvsync-slo.runbookURLPrefix" . }}
{{- $uidPrefix := include "rvsync-slo.dashboardUIDPrefix" . }}
{{- $ns := include "rvsync-slo.alertNamespace" . }}
{{- $disabled := $s.disabledAlerts | default dict }}
{{- $alertNames := list ` + quotedList(AlertNames()) + ` }}
{{- range $name, $_ := $disabled }}
{{- if not (has $name $alertNames) }}
{{- fail (printf "slo.disabledAlerts: no alert named %q; the alerts are %s" $name (join ", " $alertNames)) }}
{{- end }}
{{- end }}
`
}

// quotedList writes names as the arguments of a template's list.
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " ")
}

// groupCondition is the template condition of an SLO's groups, "" for the
// symptom group.
func groupCondition(group string) string {
	for _, c := range HelmSLOs {
		if group == sloGroupName(c.Name) || group == budgetGroupName(c.Name) {
			cond := "$s." + c.Key + ".enabled"
			if c.Condition != "" {
				cond = "and " + cond + " " + c.Condition
			}
			return cond
		}
	}
	return ""
}

// groupYAML encodes one group as an item of the `groups:` list. Strings that
// hold a sentinel become literal block scalars, so that any value (quotes,
// `#`, `: `) can take the sentinel's place without YAML quoting.
func groupYAML(g rulefmt.RuleGroup) (string, error) {
	text, err := encodeYAML([]rulefmt.RuleGroup{g})
	if err != nil {
		return "", err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return "", err
	}
	literalSentinels(&n)
	if text, err = encodeYAML(&n); err != nil {
		return "", err
	}
	lines := strings.SplitAfter(string(text), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, ""), nil
}

// encodeYAML encodes v as Render does.
func encodeYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	err := enc.Close()
	return b.Bytes(), err
}

func literalSentinels(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.ContainsAny(n.Value, " \"{:#") {
		for _, r := range replacements() {
			if strings.Contains(n.Value, r.sentinel) {
				n.Style = yaml.LiteralStyle
				break
			}
		}
	}
	for _, c := range n.Content {
		literalSentinels(c)
	}
}

// replacements lists every sentinel with its template action, most specific first.
func replacements() []replacement {
	rs := []replacement{
		{sentinel: "{" + sentinelSelector + "}", action: "{{ $selOnly }}"},
		{sentinel: "{" + sentinelSelector + ",", action: "{{ $selFirst }}"},
		{sentinel: "{" + sentinelUpSelector + "}", action: `{{ printf "{%s}" $up }}`},
		{sentinel: sentinelRunbook, action: "{{ $runbook }}"},
		{sentinel: sentinelNamespace, action: "{{ $ns | quote }}", bounded: word},
		{sentinel: sentinelUIDPrefix, action: "{{ $uidPrefix }}"},
		{sentinel: sentinelBudget, action: "{{ $s.budgetPeriod }}", bounded: budgetBound},
		{sentinel: sentinelGrafana, action: `{{ $s.grafanaURL | trimSuffix "/" }}`},
		{sentinel: sentinelPage, action: "{{ $s.severities.page | quote }}", bounded: word},
		{sentinel: sentinelTicket, action: "{{ $s.severities.ticket | quote }}", bounded: word},
		{sentinel: sentinelCluster, action: "{{ $cl }}", bounded: word},
		{sentinel: sentinelStalledFor, action: "{{ $s.symptoms.stalledFor }}", bounded: word},
		{sentinel: sentinelNotSynced, action: "{{ $s.symptoms.notSyncedFor }}", bounded: word},
		{sentinel: sentinelErrorsFor, action: "{{ $s.symptoms.errorsFor }}", bounded: word},
		{sentinel: promql.Num(sentinelStalledSec), action: "{{ $s.symptoms.stalledAfterSeconds }}", bounded: number},
		{sentinel: promql.Num(sentinelRelists), action: "{{ $s.symptoms.relistsPerHour }}", bounded: number},
		{sentinel: sentinelBackpress, action: "{{ $s.symptoms.backpressureFor }}", bounded: word},
		{sentinel: promql.Num(sentinelQueueDepth), action: "{{ $s.symptoms.queueDepthLimit }}", bounded: number},
		{sentinel: sentinelAPIServer, action: "{{ $s.apiServerJob }}", bounded: word},
	}
	for _, c := range HelmSLOs {
		v := "$s." + c.Key
		if c.ThresholdKey != "" {
			if o, _ := slo.DefaultSpec().SLO(c.Name); o.Kind == slo.EventRatio {
				// event ratios select the threshold's bucket; the helper writes
				// the matcher as promql.Le does (le="1.5", or le=~"30(\\.0)?")
				rs = append(rs, replacement{sentinel: promql.Eq("le", promql.Num(c.sentinelThreshold)), action: fmt.Sprintf(`{{ include "rvsync-slo.leMatcher" %s.%s }}`, v, c.ThresholdKey)})
			}
			rs = append(rs, replacement{sentinel: promql.Num(c.sentinelThreshold), action: fmt.Sprintf("{{ %s.%s }}", v, c.ThresholdKey), bounded: number})
		}
		rs = append(rs,
			replacement{sentinel: promql.Num(c.sentinelObjective * 100), action: fmt.Sprintf("{{ mulf %s.objective 100 }}", v), bounded: number},
			replacement{sentinel: promql.Num(c.sentinelObjective), action: fmt.Sprintf("{{ %s.objective }}", v), bounded: number},
		)
	}
	return rs
}

// substitute replaces each sentinel with its action. It fails when a sentinel is never found (the rules changed
// shape) or survives (an occurrence in an unexpected context).
func substitute(text string) ([]byte, error) {
	text = extraLabelsLine(text)
	for _, r := range replacements() {
		var n int
		text, n = replaceBounded(text, r)
		if n == 0 {
			return nil, fmt.Errorf("chart rules: sentinel %q not found", r.sentinel)
		}
	}
	for _, r := range replacements() {
		if _, n := replaceBounded(text, r); n > 0 {
			return nil, fmt.Errorf("chart rules: sentinel %q left in an unexpected context", r.sentinel)
		}
	}
	return []byte(text), nil
}

// extraLabelsLine replaces the sentinel extra label and extra annotation of
// each alert with the values' extra labels and annotations, at the same
// indentation.
func extraLabelsLine(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch strings.TrimSpace(trimmed) {
		case sentinelExtraKey + ": " + sentinelExtraValue:
			lines[i] = fmt.Sprintf("{{- with $labels }}{{ . | nindent %d }}{{- end }}\n", len(l)-len(trimmed))
		case sentinelAnnotation + ": " + sentinelExtraValue:
			lines[i] = fmt.Sprintf("{{- with $s.additionalRuleAnnotations }}{{ toYaml . | nindent %d }}{{- end }}\n", len(l)-len(trimmed))
		}
	}
	return strings.Join(lines, "")
}

// disableableAlerts puts each alert of a group's YAML inside a condition on
// the values' slo.disabledAlerts, so the chart leaves out the alerts the
// user disabled (a burn-rate alert's four windows share one name).
func disableableAlerts(text string) string {
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	open := "" // indentation of the open alert item, "" when none
	for _, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(trimmed)]
		if open != "" && l != "" && (len(indent) < len(open) || (len(indent) == len(open) && strings.HasPrefix(trimmed, "- "))) {
			b.WriteString("{{- end }}\n")
			open = ""
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(trimmed), "- alert: "); ok {
			b.WriteString(fmt.Sprintf("{{- if not (index $disabled %q) }}\n", name))
			open = indent
		}
		b.WriteString(l)
	}
	if open != "" {
		b.WriteString("{{- end }}\n")
	}
	return b.String()
}

// replaceBounded replaces the occurrences of r.sentinel whose neighbours
// r.bounded accepts, and counts them.
func replaceBounded(text string, r replacement) (string, int) {
	var b strings.Builder
	n := 0
	for {
		i := strings.Index(text, r.sentinel)
		if i < 0 {
			b.WriteString(text)
			return b.String(), n
		}
		end := i + len(r.sentinel)
		if r.bounded != nil && !r.bounded(text[:i], text[end:]) {
			b.WriteString(text[:end])
			text = text[end:]
			continue
		}
		b.WriteString(text[:i] + r.action)
		text = text[end:]
		n++
	}
}

// number accepts a numeric literal not part of a longer one ("0.025s" is
// fine, "10.025" and "0.0251" are not).
func number(prev, next string) bool {
	if prev != "" && strings.ContainsAny(prev[len(prev)-1:], "0123456789.") {
		return false
	}
	if next != "" && isDigit(next[0]) {
		return false
	}
	return !(len(next) > 1 && next[0] == '.' && isDigit(next[1]))
}

// budgetBound accepts the budget period in a range ([347d]), a text or a
// recording-rule name's end (ratio_rate347d), not inside a longer number
// or name.
func budgetBound(prev, next string) bool {
	ident := func(c byte) bool { return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	return (prev == "" || !isDigit(prev[len(prev)-1])) && (next == "" || !ident(next[0]))
}

// word accepts a name or duration not part of a longer identifier.
func word(prev, next string) bool {
	ident := func(c byte) bool { return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	return (prev == "" || !ident(prev[len(prev)-1])) && (next == "" || !ident(next[0]))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
