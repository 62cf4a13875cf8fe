package model

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// answer is what a request got, and when.
type answer struct {
	at   time.Time
	code int
	rv   string // the list's resourceVersion
	err  error
}

// send sends a request of method to url in the background and reports
// its answer (for a watch: its response's headers).
func send(client *http.Client, method, url, body string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			out <- answer{at: time.Now(), err: err}
			return
		}
		a := answer{at: time.Now(), code: resp.StatusCode}
		if !strings.Contains(url, "watch=true") {
			var l struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			b, _ := io.ReadAll(resp.Body)
			_ = json.Unmarshal(b, &l)
			a.rv = l.Metadata.ResourceVersion
		}
		_ = resp.Body.Close()
		out <- a
	}()
	return out
}

// frames opens a watch and collects what its stream carries: each frame's
// type and resource version, and when it arrived.
type frames struct {
	mu   sync.Mutex
	seen []seenFrame
}

type seenFrame struct {
	at      time.Time
	typ, rv string
	initial bool
}

func openWatch(t *testing.T, client *http.Client, url string) *frames {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return readFrames(resp)
}

func readFrames(resp *http.Response) *frames {
	f := &frames{}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						ResourceVersion string            `json:"resourceVersion"`
						Annotations     map[string]string `json:"annotations"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			f.mu.Lock()
			f.seen = append(f.seen, seenFrame{at: time.Now(), typ: e.Type, rv: e.Object.Metadata.ResourceVersion, initial: e.Object.Metadata.Annotations[initialEventsEnd] == "true"})
			f.mu.Unlock()
		}
	}()
	return f
}

// since returns the frames that arrived after t.
func (f *frames) since(t time.Time) []seenFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenFrame
	for _, x := range f.seen {
		if x.at.After(t) {
			out = append(out, x)
		}
	}
	return out
}

// An API server cut off etcd, as TestHAServerLosesEtcd measured one on
// kube-apiserver 1.37.2 and 1.34.4 (docs/testing.md): every watch cache
// of it stands still at its RV, sending bookmarks at it every minute to a
// watch opened before from below it and none to one opened during the
// stall; a List at RV 0 answers from the stuck cache at once; a consistent
// List, a Get and a write fail at the 60s request timeout (504); a List
// from a newer RV gets "too large resource version" after its 3s wait; a
// watch with the RV unset and a watch-list hang until the release. At the
// release every cache reaches etcd, the watches get what was written, the
// hung ones start; a cache stuck on its own (StickCache) stays stuck.
func TestAServerCutOffEtcdServesItsStuckCachesAndHangsWhatNeedsEtcd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(7)
		c.AddResource(ResourceSpec{Version: "v1", Plural: "secrets", Kind: "Secret", Namespaced: true})
		const base = "https://informers/api/v1/configmaps"
		var below, stuck uint64
		c.Do(func(tx *Tx) {
			below = tx.Create("configmaps", "default", "one", nil).Rev
			tx.Create("secrets", "default", "s", nil)
		})
		before := openWatch(t, client, base+"?watch=true&allowWatchBookmarks=true&resourceVersion="+strconv.FormatUint(below, 10))
		advanceFor(c, time.Second)
		c.Do(func(tx *Tx) { stuck = tx.Create("configmaps", "default", "two", nil).Rev })
		advanceFor(c, time.Second)
		c.Do(func(tx *Tx) {
			tx.CutOff(0, true)
			tx.StickCache(0, "secrets", true) // a fault of its own, outlasting the cut
			tx.Create("configmaps", "default", "three", nil)
			tx.Create("secrets", "default", "t", nil)
			if !tx.CutOffFromEtcd(0) || tx.Serving() {
				t.Error("the only server cut off etcd serves writes")
			}
		})
		cut := time.Now()
		rv := func(tx *Tx) uint64 { return tx.CacheRV(0, "configmaps") }
		c.Do(func(tx *Tx) {
			if rv(tx) != stuck {
				t.Errorf("the cache moved to %d when cut off etcd, want it at %d", rv(tx), stuck)
			}
			if !tx.Stuck("informers", "configmaps") || tx.Following("informers", "configmaps") {
				t.Error("the truth does not tell the watch's cache stuck")
			}
		})

		at0 := <-send(client, "GET", base+"?resourceVersion=0", "")
		if at0.code != 200 || at0.rv != strconv.FormatUint(stuck, 10) || at0.at.Sub(cut) > time.Second {
			t.Errorf("a List at RV 0 got %d at RV %s after %v, want 200 at the stuck RV %d at once", at0.code, at0.rv, at0.at.Sub(cut), stuck)
		}
		consistent := send(client, "GET", base, "")
		get := send(client, "GET", "https://informers/api/v1/namespaces/default/configmaps/one", "")
		create := send(client, "POST", "https://informers/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"four"}}`)
		newer := send(client, "GET", base+"?resourceVersion="+strconv.FormatUint(stuck+5, 10), "")
		resp, err := client.Get(base + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + strconv.FormatUint(below, 10))
		if err != nil {
			t.Fatal(err)
		}
		during := readFrames(resp)
		unset := send(client, "GET", base+"?watch=true&allowWatchBookmarks=true", "")
		watchList := send(client, "GET", base+"?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "")

		advanceFor(c, 4*time.Second)
		synctest.Wait()
		if a := <-newer; a.code != 504 || a.at.Sub(cut) < 3*time.Second {
			t.Errorf("a List from a newer RV got %d after %v, want 504 (too large) after its 3s wait", a.code, a.at.Sub(cut))
		}
		advanceFor(c, 60*time.Second)
		synctest.Wait()
		for name, ch := range map[string]<-chan answer{"a consistent List": consistent, "a Get": get, "a create": create} {
			select {
			case a := <-ch:
				if d := a.at.Sub(cut); a.code != 504 || d < requestTimeout || d > requestTimeout+time.Second {
					t.Errorf("%s got %d (%v) after %v, want 504 at the request timeout", name, a.code, a.err, d)
				}
			default:
				t.Errorf("%s still hangs past the request timeout", name)
			}
		}
		if len(unset) != 0 || len(watchList) != 0 {
			t.Error("a watch with the RV unset or a watch-list started on a server cut off etcd")
		}
		advanceFor(c, 90*time.Second) // 2.5 min cut off
		synctest.Wait()
		var bookmarks int
		for _, f := range before.since(cut) {
			if f.typ != Bookmark || f.rv != strconv.FormatUint(stuck, 10) {
				t.Errorf("the watch opened before the cut got %s at RV %s, want bookmarks at the stuck RV %d only", f.typ, f.rv, stuck)
			}
			bookmarks++
		}
		if bookmarks != 2 {
			t.Errorf("the watch opened before the cut got %d bookmarks in 2.5 min, want one a minute", bookmarks)
		}
		for _, f := range during.since(cut) {
			if f.typ == Bookmark {
				t.Errorf("the watch opened during the cut from below the stuck RV got a bookmark at %s", f.rv)
			}
		}

		c.Do(func(tx *Tx) { tx.CutOff(0, false) })
		released := time.Now()
		advanceFor(c, time.Second)
		synctest.Wait()
		c.Do(func(tx *Tx) {
			if rv(tx) != tx.Revision(MainEtcd) {
				t.Errorf("released, the cache is at %d, want etcd's revision", rv(tx))
			}
			if tx.CacheRV(0, "secrets") >= tx.Get("secrets", "default", "t").RV {
				t.Error("the release caught up a cache stuck on its own")
			}
			if !tx.Serving() || tx.Following("informers", "configmaps") != true {
				t.Error("released, the server does not serve, or its cache does not follow")
			}
		})
		var events int
		for _, f := range before.since(released) {
			if f.typ == Added {
				events++
			}
		}
		if events != 1 {
			t.Errorf("released, the watch opened before the cut got %d events, want the one write it missed", events)
		}
		for name, ch := range map[string]<-chan answer{"the watch with the RV unset": unset, "the watch-list": watchList} {
			select {
			case a := <-ch:
				if a.code != 200 || a.at.Sub(released) > time.Second {
					t.Errorf("%s got %d (%v) %v after the release, want it started", name, a.code, a.err, a.at.Sub(released))
				}
			default:
				t.Errorf("%s still hangs after the release", name)
			}
		}
		c.Close()
		time.Sleep(time.Second) // the watches' readers get the end
	})
}

// A server that starts while cut off etcd cannot list it: its watch
// caches come at the release, listed from etcd then. Restarted then, a
// consistent List hangs as on any server cut off.
func TestAServerStartedCutOffEtcdGetsItsCachesAtTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(7)
		c.Do(func(tx *Tx) {
			tx.CutOff(0, true)
			tx.Stop(0)
			tx.Start(0)
			tx.Create("configmaps", "default", "one", nil)
		})
		if a := <-send(client, "GET", "https://informers/api/v1/configmaps?resourceVersion=0", ""); a.code != 503 {
			t.Errorf("a List at RV 0 of a server started cut off got %d, want 503 (no watch cache)", a.code)
		}
		c.Do(func(tx *Tx) { tx.CutOff(0, false) })
		a := <-send(client, "GET", "https://informers/api/v1/configmaps", "")
		var want uint64
		c.Do(func(tx *Tx) { want = tx.Revision(MainEtcd) })
		if a.code != 200 || a.rv != strconv.FormatUint(want, 10) {
			t.Errorf("released, a consistent List got %d at RV %s, want 200 at etcd's %d", a.code, a.rv, want)
		}
		c.Close()
	})
}

// An HTTP/1.1 request the client gives up on closes its connection, as
// Go's transport does (it cannot tell where the answer would have ended),
// so the next request dials one the balancer places anew: a client whose
// pooled connection is on an API server cut off etcd reaches the others
// once its read times out (page seed 1900009: the connection went back to
// the pool, and the probe's every head read for 15 minutes hung on the
// cut server while two others served).
func TestAGivenUpHTTP1RequestClosesItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Seed: 7, Servers: 3})
		c.AddResource(ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true})
		client := &http.Client{Transport: c.Transport()}
		const url = "https://probe/api/v1/configmaps?limit=1"
		c.Do(func(tx *Tx) { tx.SetHTTP1("probe", true) })
		if r := <-get(client, "https://other"+url[len("https://probe"):]); r.err != nil { // (the balancer's next is server 1)
			t.Fatal(r.err)
		}
		if r := <-get(client, url); r.err != nil {
			t.Fatal(r.err)
		}
		c.Do(func(tx *Tx) {
			if got := tx.Routes()["probe"]; len(got) != 1 || got[0] != 1 {
				t.Fatalf("the probe's connection is on %v, want server 1", got)
			}
			tx.CutOff(1, true)
		})
		read := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			done := make(chan error, 1)
			go func() {
				resp, err := client.Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				done <- err
			}()
			advanceFor(c, 11*time.Second)
			synctest.Wait()
			return <-done
		}
		if err := read(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a consistent read on the cut server ended with %v, want the client's deadline", err)
		}
		if err := read(); err != nil {
			t.Errorf("the read after one given up failed (%v): its connection went back to the pool on the cut server", err)
		}
		c.Do(func(tx *Tx) {
			if got := tx.Routes()["probe"]; slices.Contains(got, 1) {
				t.Errorf("the probe still has a connection on the cut server: %v", got)
			}
		})
		c.Close()
	})
}
