package config

import (
	"fmt"
	"testing"
)

// Every resource is watched by exactly one shard, whatever the shard count.
func TestShardsCoverEveryResourceOnce(t *testing.T) {
	var cfg Config
	cfg.Defaults()
	for i := range 50 {
		cfg.Resources = append(cfg.Resources, ResourceConfig{Name: fmt.Sprintf("widgets%d.example.com", i)})
	}
	for total := 1; total <= 7; total++ {
		owner := map[string]int{}
		for shard := range total {
			c := cfg
			c.Shard, c.TotalShards = shard, total
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, r := range c.OwnResources() {
				if prev, dup := owner[r.Name]; dup {
					t.Errorf("total %d: %s watched by shards %d and %d", total, r.Name, prev, shard)
				}
				owner[r.Name] = shard
			}
		}
		if len(owner) != len(cfg.Resources) {
			t.Errorf("total %d: %d of %d resources covered", total, len(owner), len(cfg.Resources))
		}
	}
}

func TestShardValidationAndOrdinal(t *testing.T) {
	for _, c := range []struct {
		shard, total int
		ok           bool
	}{{0, 1, true}, {2, 3, true}, {3, 3, false}, {-1, 2, false}, {0, -1, false}} {
		cfg := Config{Shard: c.shard, TotalShards: c.total}
		cfg.Defaults()
		cfg.TotalShards = c.total
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("shard %d of %d: err %v; want ok=%v", c.shard, c.total, err, c.ok)
		}
	}
	for _, c := range []struct {
		pod  string
		want int
		ok   bool
	}{{"rvsync-slo-0", 0, true}, {"rvsync-slo-12", 12, true}, {"rvsync-slo", 0, false}, {"7", 0, false}, {"x-+1", 0, false}, {"x--1", 1, true}} {
		got, err := ordinal(c.pod)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ordinal(%q) = %d, %v; want %d, ok=%v", c.pod, got, err, c.want, c.ok)
		}
	}
}
