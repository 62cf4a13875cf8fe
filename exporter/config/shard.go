package config

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// ShardOf returns the shard (0 … total-1) that watches resource: a hash of
// its name, so every replica computes the same split without coordination
// and each resource is watched by exactly one shard.
func ShardOf(resource string, total int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(resource))
	return int(h.Sum32() % uint32(total))
}

// OwnResources returns the resources of c that shard c.Shard watches.
func (c *Config) OwnResources() []ResourceConfig {
	if c.TotalShards <= 1 {
		return c.Resources
	}
	var out []ResourceConfig
	for _, r := range c.Resources {
		if ShardOf(r.Name, c.TotalShards) == c.Shard {
			out = append(out, r)
		}
	}
	return out
}

// ordinal parses the StatefulSet ordinal at the end of a pod name
// ("rvsync-slo-2" → 2).
func ordinal(pod string) (int, error) {
	i := strings.LastIndexByte(pod, '-')
	digits := pod[i+1:]
	n, err := strconv.Atoi(digits)
	if i < 0 || err != nil || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("pod name %q does not end in a StatefulSet ordinal (-N)", pod)
	}
	return n, nil
}
