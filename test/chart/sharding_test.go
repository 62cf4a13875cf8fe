//go:build integration

package chart_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
)

func shardedValues(shards int) map[string]any {
	return map[string]any{"sharding": map[string]any{"enabled": true, "shards": shards}}
}

// TestSharding: sharding renders a StatefulSet of one pod per shard instead
// of the Deployment, and a config that makes pod <fullname>-N shard N; over
// all pods every configured resource (the canary's included) is watched
// exactly once.
func TestSharding(t *testing.T) {
	for _, shards := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			m := render(t, chart.Options{Values: shardedValues(shards)})
			if n := len(m.OfKind("Deployment")); n != 0 {
				t.Errorf("rendered %d Deployments next to the StatefulSet", n)
			}
			sts := into[appsv1.StatefulSet](t, m, "StatefulSet")
			if sts.Spec.Replicas == nil || int(*sts.Spec.Replicas) != shards {
				t.Errorf("StatefulSet replicas %v, want %d", sts.Spec.Replicas, shards)
			}
			if want := fullname(t, m); sts.Spec.ServiceName != want {
				t.Errorf("serviceName %q, want the chart's Service %q", sts.Spec.ServiceName, want)
			}
			if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				t.Errorf("podManagementPolicy %q, want Parallel", sts.Spec.PodManagementPolicy)
			}
			cfg, raw := exporterConfig(t, m)
			if cfg.TotalShards != shards || !cfg.ShardFromPodName {
				t.Fatalf("config: want totalShards %d and shardFromPodName, got\n%s", shards, raw)
			}
			cfg.Defaults()
			watchers := map[string][]int{}
			for ordinal := range shards {
				t.Setenv("POD_NAME", fmt.Sprintf("%s-%d", sts.Name, ordinal))
				pod := cfg
				if err := pod.ResolveShard(); err != nil {
					t.Fatal(err)
				}
				if err := pod.Validate(); err != nil {
					t.Fatalf("pod %d: %v", ordinal, err)
				}
				if pod.Shard != ordinal {
					t.Errorf("pod %d resolves shard %d", ordinal, pod.Shard)
				}
				for _, r := range pod.OwnResources() {
					if s := config.ShardOf(r.Name, shards); s != ordinal {
						t.Errorf("%s: watched by pod %d, hashes to shard %d", r.Name, ordinal, s)
					}
					watchers[r.Name] = append(watchers[r.Name], ordinal)
				}
			}
			for _, r := range cfg.Resources {
				if w := watchers[r.Name]; len(w) != 1 {
					t.Errorf("%s watched by pods %v, want exactly one", r.Name, w)
				}
			}
			if len(watchers) != len(cfg.Resources) {
				t.Errorf("pods watch %d resources, config has %d", len(watchers), len(cfg.Resources))
			}
		})
	}
}

// TestShardingRefusesReplicas: replicas means Deployment replicas; with
// sharding the shards set the pod count, so both above one is refused.
func TestShardingRefusesReplicas(t *testing.T) {
	v := shardedValues(3)
	v["replicas"] = 2
	_, err := chart.Template(chart.Options{Values: v})
	if err == nil || !strings.Contains(err.Error(), "sharding.shards") {
		t.Fatalf("want a failure naming sharding.shards, got %v", err)
	}
}
