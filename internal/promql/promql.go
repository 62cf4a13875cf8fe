package promql

import (
	"fmt"
	"strconv"
	"strings"
)

// Eq is the matcher label="value".
func Eq(label, value string) string { return fmt.Sprintf("%s=%q", label, value) }

// Neq is the matcher label!="value".
func Neq(label, value string) string { return fmt.Sprintf("%s!=%q", label, value) }

// Re is the matcher label=~"v1|v2|…" (one value may itself be a regexp or a
// Grafana variable such as "$resource").
func Re(label string, values ...string) string {
	return fmt.Sprintf("%s=~%q", label, strings.Join(values, "|"))
}

// Num formats a number the shortest exact way, e.g. 1.5, 30, 0.99.
func Num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Le selects the histogram bucket whose upper bound is threshold.
// Prometheus 3 stores whole-number bounds as "30.0", Prometheus 2 as "30";
// the regexp takes both.
func Le(threshold float64) string {
	v := Num(threshold)
	if strings.ContainsAny(v, ".e") {
		return Eq("le", v)
	}
	return fmt.Sprintf(`le=~"%s(\\.0)?"`, v)
}

// Selector returns name{m1, m2, …}, or name alone without matchers; empty
// matchers are skipped.
func Selector(name string, matchers ...string) string {
	var ms []string
	for _, m := range matchers {
		if m != "" {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return name
	}
	return name + "{" + strings.Join(ms, ", ") + "}"
}

// By returns the grouping clause "by (l1, l2, …)".
func By(labels ...string) string { return "by (" + strings.Join(labels, ", ") + ")" }
