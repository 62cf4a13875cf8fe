package dashboards_test

import (
	"fmt"
	"slices"

	"github.com/rvsync-slo/rvsync-slo/dashboards"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Render the dashboards for an operator that embeds pkg/probe, in a
// single-cluster Prometheus: every exporter query selects job="my-operator".
func ExampleRender() {
	spec := slo.DefaultSpec()
	spec.Selector = `job="my-operator"`
	files, err := dashboards.Render(dashboards.Config{Spec: spec, SingleCluster: true})
	if err != nil {
		panic(err)
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [rvsync-overview.json rvsync-resource.json rvsync-slos.json]
}
