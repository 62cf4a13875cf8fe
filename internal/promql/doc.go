// Package promql writes the small pieces of PromQL that the SLO model, the
// rule generator and the dashboard builders share: label matchers, numbers
// in their shortest exact form, and the histogram bucket matcher of a
// threshold. Keeping them in one place keeps the quoting and number formats
// of rules and dashboards identical.
package promql
