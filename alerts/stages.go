package alerts

import (
	"fmt"
	"maps"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// stageGroupName names the group of the stage rules.
const stageGroupName = "rvsync-slo-stages"

// stageGroup holds the stage rules (slo.Spec.StageRecords): each
// resource's delay broken into stages from etcd to the client, and the
// worst of them, which every alert about a resource names (where).
func (s generator) stageGroup() rulefmt.RuleGroup {
	var rules []rulefmt.Rule
	for _, r := range s.StageRecords() {
		rules = append(rules, rulefmt.Rule{Record: r.Record, Expr: r.Expr, Labels: maps.Clone(r.Labels)})
	}
	return rulefmt.RuleGroup{Name: stageGroupName, Rules: rules}
}

// stageWhere says where a stage's delay is, as a Prometheus template over
// the worst stage's sample (.Labels, .Value).
var stageWhere = map[string]string{
	slo.StageEtcdToCache:   "the watch cache of API server {{ .Labels.instance }}, {{ .Value | humanizeDuration }} behind etcd",
	slo.StageCacheToClient: "between the API servers' watch cache and the client (the server's dispatch to watchers, or the network){{ with .Labels.instance }}, where API server {{ . }} closes slow watchers{{ end }}, {{ .Value | humanizeDuration }}",
	slo.StageClient:        "the client itself, between its watch and its store or handlers, {{ .Value | humanizeDuration }}",
}

// where is the sentence an alert about a resource ends with: the worst
// stage of its delay at firing time (slo.RuleWorstStage), read with a
// query in the template. Without one (no API server series, or no stage
// above slo.StageFloorSeconds) it is empty and the description reads as
// it did without the API servers' metrics.
func (s generator) where() string {
	// resource first: a `{` next to the chart's {{ $cl }} would open a template action
	query := fmt.Sprintf(`printf "%s{%s=%%q, %s=%%q}" $labels.%s $labels.%s | query`,
		slo.RuleWorstStage, catalog.LabelResource, s.ClusterLabel, catalog.LabelResource, s.ClusterLabel)
	var b strings.Builder
	fmt.Fprintf(&b, "{{ with %s }}{{ with . | first }} Where: ", query)
	for i, stage := range slo.Stages() {
		if i > 0 {
			b.WriteString("{{ else ")
		} else {
			b.WriteString("{{ ")
		}
		fmt.Fprintf(&b, "if eq .Labels.%s %q }}%s", slo.LabelStage, stage, stageWhere[stage])
	}
	fmt.Fprintf(&b, "{{ end }} (stage {{ .Labels.%s }}, from {{ .Labels.%s }}).{{ end }}{{ end }}", slo.LabelStage, slo.LabelSignal)
	return b.String()
}
