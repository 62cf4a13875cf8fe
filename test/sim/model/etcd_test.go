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

// A store that lacks a key whose deletion a restore undid, back to before
// the key was created, lacks nothing: absent either way. The truth took the
// undone deletion as the store's state and counted the restore's revert
// as missing (simulation seed 1001680: a CRD deleted, etcd restored 50,000
// back, a store that relisted after it read as lacking 7 changes).
func TestAStoreLackingAKeyARestoreUnmadeLacksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Seed: 1})
		c.AddResource(ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true})
		c.Do(func(tx *Tx) {
			before := tx.Revision(MainEtcd)
			tx.Create("configmaps", "ns", "a", nil)
			tx.Delete("configmaps", "ns", "a")
			tx.Restore(MainEtcd, before)
			if _, missing, _ := tx.Fresh(tx.StoreView("configmaps", Scope{}, map[string]string{}), now()); missing != 0 {
				t.Errorf("an empty store lacks %d changes after a restore to before the only key was created", missing)
			}
			tx.Create("configmaps", "ns", "a", nil)
			if _, missing, _ := tx.Fresh(tx.StoreView("configmaps", Scope{}, map[string]string{}), now()); missing != 1 {
				t.Errorf("an empty store lacks %d changes once the key is created again; want 1", missing)
			}
		})
		c.Close()
	})
}
