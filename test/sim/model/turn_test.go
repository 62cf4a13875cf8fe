package model

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// What the model does at one instant reaches each client at an instant of
// its own, within a turn: two watches a write reaches, or a restart
// breaks, never wake their readers at one instant of the bubble's clock,
// where the scheduler would pick which runs first (TestDeterminism: a
// restart broke four reflectors' watches at one instant, and the order in
// which they drew their retries' jitter varied with the machine's load).
func TestEachStreamWakesItsReaderInItsOwnTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Seed: 7})
		c.AddResource(ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true})
		client := &http.Client{Transport: c.Transport()}
		var (
			mu    sync.Mutex
			woken = map[string][]time.Time{} // per host, when its reader got something
			wg    sync.WaitGroup
		)
		hosts := []string{"a", "b", "c", "d"}
		for _, h := range hosts {
			resp, err := client.Get(fmt.Sprintf("https://%s/api/v1/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=false", h))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				defer resp.Body.Close()
				buf := make([]byte, 64<<10)
				for {
					_, err := resp.Body.Read(buf)
					mu.Lock()
					woken[h] = append(woken[h], time.Now())
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
		synctest.Wait()
		wrote := time.Now()
		c.Do(func(tx *Tx) { tx.Create("configmaps", "default", "one", nil) })
		time.Sleep(time.Second)
		synctest.Wait()
		stopped := time.Now()
		c.Do(func(tx *Tx) { tx.Stop(0) })
		wg.Wait()
		for i, at := range []time.Time{wrote, stopped} {
			var got []time.Time
			for _, h := range hosts {
				if len(woken[h]) != 2 {
					t.Fatalf("host %s woke %d times, want 2 (the event, the break)", h, len(woken[h]))
				}
				w := woken[h][i]
				if !w.After(at) || w.Sub(at) > maxTurn {
					t.Errorf("host %s woke %v after the model's move, want within (0, %v]", h, w.Sub(at), maxTurn)
				}
				got = append(got, w)
			}
			slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
			if len(slices.CompactFunc(slices.Clone(got), time.Time.Equal)) != len(hosts) {
				t.Errorf("move %d: readers woke at %v, want %d instants", i, got, len(hosts))
			}
		}
		c.Close()
	})
}
