package model

import (
	"testing"
	"testing/synctest"
)

// A create of a CRD that exists is refused (409 AlreadyExists): the
// resource keeps its watch cache, and the watches it serves keep hearing
// its writes. (Two overlapping deletions of one CRD in a history re-create
// it twice; the second used to swap in a new cache and leave the watches
// of the first on an orphan that sent bookmarks and no events: page seed
// 856.)
func TestCreatingAServedResourceKeepsItsCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Seed: 1, Servers: 2})
		spec := ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
		c.AddResource(spec)
		c.Do(func(tx *Tx) { tx.DeleteResource("configmaps") })
		c.AddResource(spec)
		var served []*watchCache
		for _, s := range c.servers {
			served = append(served, s.caches["configmaps"])
		}
		c.AddResource(spec)
		for i, s := range c.servers {
			if s.caches["configmaps"] != served[i] {
				t.Errorf("server %d: creating the served configmaps again replaced its watch cache", i)
			}
		}
		c.Close()
	})
}
