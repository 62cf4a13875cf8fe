package model

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// configMapsCluster is a model cluster of seed serving configmaps, and a
// client of it.
func configMapsCluster(seed uint64) (*Cluster, *http.Client) {
	c := New(Config{Seed: seed})
	c.AddResource(ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true})
	return c, &http.Client{Transport: c.Transport()}
}

// What the model does at one instant reaches each client at an instant of
// its own, within a turn: two watches a write reaches, or a restart
// breaks, never wake their readers at one instant of the bubble's clock,
// where the scheduler would pick which runs first (TestDeterminism: a
// restart broke four reflectors' watches at one instant, and the order in
// which they drew their retries' jitter varied with the machine's load).
func TestEachStreamWakesItsReaderInItsOwnTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(7)
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

// Requests that reach the model at one instant are served in one order,
// whatever order their goroutines ran in: which ran first is the
// scheduler's choice (a goroutine preempted under load lets the next one
// run first), and it drew their turns and their answers' instants
// (TestDeterminism: the monitor's head probes of two RV spaces, started
// at one instant, swapped their answers' instants once in 300 runs of
// seed 75776 beside a busy machine).
func TestRequestsOfOneInstantAreServedInOneOrder(t *testing.T) {
	hosts := []string{"a", "b", "c", "d", "e"}
	answered := func(order []string) map[string]time.Duration {
		got := map[string]time.Duration{}
		synctest.Test(t, func(t *testing.T) {
			c, client := configMapsCluster(7)
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := time.Now()
			for _, h := range order {
				wg.Go(func() {
					resp, err := client.Get("https://" + h + "/api/v1/configmaps?limit=1")
					if err != nil {
						t.Error(err)
						return
					}
					_ = resp.Body.Close()
					mu.Lock()
					got[h] = time.Since(start)
					mu.Unlock()
				})
				runtime.Gosched() // each goroutine sends before the next starts
			}
			wg.Wait()
			c.Close()
		})
		return got
	}
	forward := answered(hosts)
	reversed := slices.Clone(hosts)
	slices.Reverse(reversed)
	backward := answered(reversed)
	for _, h := range hosts {
		if forward[h] != backward[h] {
			t.Errorf("host %s answered after %v when it sent first, %v when last: the arrival order within an instant chose", h, forward[h], backward[h])
		}
	}
}
