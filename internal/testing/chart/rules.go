package chart

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// PrometheusRule strictly decodes the rendered PrometheusRule.
func (m Manifests) PrometheusRule() (*monv1.PrometheusRule, error) {
	u, err := m.One(monv1.PrometheusRuleKind)
	if err != nil {
		return nil, err
	}
	var pr monv1.PrometheusRule
	return &pr, Into(u, &pr)
}

// RuleFile returns the rule groups of a PrometheusRule as a Prometheus rule file.
func RuleFile(pr *monv1.PrometheusRule) ([]byte, error) {
	return sigsyaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

// ParseRules parses and validates a Prometheus rule file as Prometheus
// loads it: unknown fields, bad expressions, bad templates and duplicate
// rules are errors.
func ParseRules(content []byte) (*rulefmt.RuleGroups, error) {
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return groups, nil
}

// NormalRules returns a rule file in a canonical form, so that two files
// with the same rules compare equal whatever their layout: every expression
// is parsed and printed on one line (label matchers sorted, numbers in one
// format), `for` is a parsed duration, maps are sorted by key.
func NormalRules(content []byte) (string, error) {
	groups, err := ParseRules(content)
	if err != nil {
		return "", err
	}
	p := parser.NewParser(parser.Options{})
	for _, g := range groups.Groups {
		for i, r := range g.Rules {
			e, err := p.ParseExpr(r.Expr)
			if err != nil {
				return "", fmt.Errorf("group %s rule %d: %w", g.Name, i, err)
			}
			g.Rules[i].Expr = e.String()
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(groups); err != nil {
		return "", err
	}
	return b.String(), enc.Close()
}

// RulesKey is the rules ConfigMap's key holding the rule file.
const RulesKey = "rvsync-slo.rules.yaml"

// RuleFiles returns the rule files of a rendering by where they ship: the
// PrometheusRule's groups ("PrometheusRule") and each ConfigMap holding
// RulesKey ("ConfigMap <name>").
func (m Manifests) RuleFiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(m.OfKind(monv1.PrometheusRuleKind)) > 0 {
		pr, err := m.PrometheusRule()
		if err != nil {
			return nil, err
		}
		if out[monv1.PrometheusRuleKind], err = RuleFile(pr); err != nil {
			return nil, err
		}
	}
	for _, u := range m.OfKind("ConfigMap") {
		var cm corev1.ConfigMap
		if err := Into(u, &cm); err != nil {
			return nil, err
		}
		if f, ok := cm.Data[RulesKey]; ok {
			out["ConfigMap "+cm.Name] = []byte(f)
		}
	}
	return out, nil
}
