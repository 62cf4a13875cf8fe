//go:build integration

package exporter

import (
	"testing"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Two shards against one API server: together they export every resource,
// each exactly once, and only the shard owning configmaps runs the canary.
func TestShardsSplitResources(t *testing.T) {
	env := sharedEnv(t)
	names := []string{"configmaps", "namespaces", "serviceaccounts", "deployments.apps", "services", "leases.coordination.k8s.io"}
	seen := map[string]int{}
	var canaries int
	for shard := range 2 {
		cfg := config.Config{Resources: resources(names...), Shard: shard, TotalShards: 2}
		cfg.Canary.Namespace = "default"
		cfg.Canary.Name = "canary-shard"
		r := startExporter(t, cfg, env.Config, nil)
		var own []string
		for _, n := range names {
			if config.ShardOf(n, 2) == shard {
				own = append(own, n)
			}
		}
		r.waitSynced(t, own...)
		m := r.metrics(t)
		for _, mt := range m[catalog.InformerSynced.Name].GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == catalog.LabelResource {
					seen[l.GetValue()]++
				}
			}
		}
		if fam, ok := m[catalog.CanaryWrites.Name]; ok && len(fam.GetMetric()) > 0 {
			canaries++
		}
	}
	for _, n := range names {
		if seen[n] != 1 {
			t.Errorf("%s exported by %d shards; want exactly 1", n, seen[n])
		}
	}
	if len(seen) != len(names) {
		t.Errorf("shards export %v; want exactly %v", seen, names)
	}
	if canaries != 1 {
		t.Errorf("%d shards run a canary; want 1 (the owner of configmaps)", canaries)
	}
}
