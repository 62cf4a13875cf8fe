package main

import (
	"strings"
	"testing"
)

// The A/B table divides exporter-b's figure by the exporter's of the same
// round, and the medians, of the churn's CPU and of the sync's.
func TestABTablePerRound(t *testing.T) {
	run := func(program string, round int, cpu float64) runResult {
		return runResult{program: program, round: round, startupCPU: 10 * cpu, phases: []phaseResult{{rate: 200, cpu: cpu, events: 1000}}}
	}
	r := report{
		opts: options{rates: []float64{200}, rounds: 2, exporterB: "/b/exporter"},
		runs: []runResult{
			run(exporterName, 1, 0.10), run(exporterBName, 1, 0.05),
			run(baselineName, 1, 0.20), run(baselineName, 2, 0.20),
			run(exporterBName, 2, 0.08), run(exporterName, 2, 0.10),
		},
	}
	var b strings.Builder
	r.abTable(&b)
	for _, want := range []string{
		"| CPU-s per 1,000 events at 200/s | 0.100 (0.100–0.100) | 0.065 (0.050–0.080) | 0.65 | 0.50, 0.80 |",
		"| CPU-s to sync | 1.00 (1.00–1.00) | 0.65 (0.50–0.80) | 0.65 | 0.50, 0.80 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("A/B table:\n%s\nwant the row\n%s", b.String(), want)
		}
	}
	if got, want := programsText(r.opts), "exporter, baseline and exporter-b"; got != want {
		t.Errorf("programsText = %q, want %q", got, want)
	}
}
