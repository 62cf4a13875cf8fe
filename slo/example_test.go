package slo_test

import (
	"fmt"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Validate reports every problem at once.
func ExampleSpec_Validate() {
	spec := slo.DefaultSpec()
	spec.SLOs[0].Objective = 1.5
	spec.Windows[0].Severity = "urgent"
	fmt.Println(spec.Validate())
	// Output:
	// windows[0]: severity "urgent" is not one of [page ticket]
	// slos[0] (list-latency): objective 1.5 must be in (0, 1), e.g. 0.99
}

// Each SLO reads one catalog family; the recording-rule names follow the
// burn-rate windows.
func ExampleSLIOf() {
	d, _ := slo.SLIOf(slo.CacheStaleness)
	fmt.Println(d.Kind, d.Signal.Name, slo.ErrorRatioRule("5m"))
	// Output: time-slice rvsync_cache_staleness_seconds rvsync_slo:sli_error:ratio_rate5m
}
