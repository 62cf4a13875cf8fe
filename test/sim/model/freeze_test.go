package model

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// advanceFor runs the model's scheduled work on time for d, as the
// simulation's world does.
func advanceFor(c *Cluster, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		next, ok := c.Next()
		if !ok || next.After(end) {
			next = end
		}
		time.Sleep(time.Until(next))
		c.Advance()
	}
}

// result is when a request or a watch's reader got its answer, and which.
type result struct {
	at  time.Time
	err error
}

// get sends a GET of url in the background and reports its outcome.
func get(client *http.Client, url string) <-chan result {
	out := make(chan result, 1)
	go func() {
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		out <- result{time.Now(), err}
	}()
	return out
}

// watchEnd opens a watch of host and reports when its reader got the
// stream's end or error.
func watchEnd(t *testing.T, client *http.Client, host string) <-chan result {
	t.Helper()
	resp, err := client.Get("https://" + host + "/api/v1/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=false")
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, 1)
	go func() {
		defer resp.Body.Close()
		buf := make([]byte, 64<<10)
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				out <- result{time.Now(), err}
				return
			}
		}
	}()
	return out
}

// An HTTP/2 host frozen is what client-go's transport makes of a fault
// proxy's stall (measured on kube-apiserver 1.37.2): the health check
// closes the connection 45s after the last frame it read (a ping after
// 30s of silence, 15s for its answer), which ends its watch and its hung
// requests with "http2: client connection lost"; a request then dials a
// new connection whose TLS handshake times out after 10s, unless the
// thaw comes first.
func TestFrozenHTTP2ConnectionClosesAfterItsHealthCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(7)
		const host = "https://informers"
		watch := watchEnd(t, client, "informers")
		c.Do(func(tx *Tx) { tx.Create("configmaps", "default", "one", nil) })
		synctest.Wait()
		read := time.Now() // the event reached the reader within a turn
		time.Sleep(10 * time.Second)
		c.Do(func(tx *Tx) { tx.Freeze("informers", true, false) })
		hung := get(client, host+"/api/v1/configmaps?limit=1")
		advanceFor(c, 34*time.Second)
		synctest.Wait()
		if len(watch) != 0 || len(hung) != 0 {
			t.Fatal("the frozen connection broke before its health check closed it")
		}
		advanceFor(c, 2*time.Second)
		synctest.Wait()
		closeAt := read.Add(h2ReadIdleTimeout + h2PingTimeout)
		for name, ch := range map[string]<-chan result{"the watch": watch, "a request hung on the connection": hung} {
			r := <-ch
			if !errors.Is(r.err, errConnLost) {
				t.Errorf("%s ended with %v, want %v", name, r.err, errConnLost)
			}
			// (the event reached the reader a turn after the write; the
			// error reaches it a turn after the close)
			if d := r.at.Sub(closeAt); d <= 0 || d > 2*maxTurn {
				t.Errorf("%s ended %v after 45s from the last frame read, want within 2 turns", name, d)
			}
		}

		// the connection closed, a request dials one: its handshake times out
		start := time.Now()
		dialed := get(client, host+"/api/v1/configmaps?limit=1")
		advanceFor(c, 11*time.Second)
		synctest.Wait()
		r := <-dialed
		var ne net.Error
		if !errors.As(r.err, &ne) || !ne.Timeout() || r.err.Error() != `Get "`+host+`/api/v1/configmaps?limit=1": net/http: TLS handshake timeout` {
			t.Errorf("a request while frozen failed with %v, want net/http's TLS handshake timeout, a net.Error that times out", r.err)
		} else if d := r.at.Sub(start); d < tlsHandshakeTimeout || d > tlsHandshakeTimeout+maxTurn {
			t.Errorf("a dial while frozen failed after %v, want %v", d, tlsHandshakeTimeout)
		}

		// a dial the thaw overtakes goes on
		dialed = get(client, host+"/api/v1/configmaps?limit=1")
		advanceFor(c, 5*time.Second)
		c.Do(func(tx *Tx) { tx.Freeze("informers", false, false) })
		advanceFor(c, 2*time.Second)
		synctest.Wait()
		if r := <-dialed; r.err != nil {
			t.Errorf("a dial the thaw overtook failed: %v", r.err)
		}
		c.Close()
	})
}

// HTTP/1.1 has no health check: a frozen connection's watch, and a
// request that took an idle connection, hang until the thaw; a request
// with no idle connection left dials one, whose handshake times out.
func TestFrozenHTTP1ConnectionHangsUntilTheThaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(7)
		c.Do(func(tx *Tx) { tx.SetHTTP1("informers", true) })
		const url = "https://informers/api/v1/configmaps?limit=1"
		watch := watchEnd(t, client, "informers")
		if r := <-get(client, url); r.err != nil { // a connection goes idle
			t.Fatal(r.err)
		}
		c.Do(func(tx *Tx) { tx.Freeze("informers", true, false) })
		hung := get(client, url)
		synctest.Wait()
		start := time.Now()
		dialed := get(client, url)
		advanceFor(c, 5*time.Minute)
		synctest.Wait()
		if len(watch) != 0 || len(hung) != 0 {
			t.Fatal("a frozen HTTP/1.1 connection broke")
		}
		if r := <-dialed; !errors.Is(r.err, errTLSHandshakeTimeout) || r.at.Sub(start) < tlsHandshakeTimeout || r.at.Sub(start) > tlsHandshakeTimeout+maxTurn {
			t.Errorf("a request with no idle connection ended with %v after %v, want %v after %v", r.err, r.at.Sub(start), errTLSHandshakeTimeout, tlsHandshakeTimeout)
		}
		c.Do(func(tx *Tx) { tx.Freeze("informers", false, false) })
		advanceFor(c, time.Second)
		synctest.Wait()
		if r := <-hung; r.err != nil {
			t.Errorf("a request hung on a frozen HTTP/1.1 connection failed at the thaw: %v", r.err)
		}
		c.Close()
		if r := <-watch; !errors.Is(r.err, errConnReset) && !errors.Is(r.err, io.EOF) {
			t.Errorf("the watch ended with %v, want it open until the history closed", r.err)
		}
	})
}

// A reset at the thaw reaches a frozen HTTP/1.1 connection's watch as an
// error, even when the server had ended the watch meanwhile (its resource
// deleted, the end still in flight): the connection is closed, never
// thawed, and its watch's reader waited forever (simulation seed 1409001:
// a deleted resource's watch "stalled" for good after the reset, its
// informer never relisting to learn it was gone).
func TestAResetReachesAFrozenWatchItsServerEnded(t *testing.T) {
	for _, http1 := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			c, client := configMapsCluster(7)
			c.Do(func(tx *Tx) { tx.SetHTTP1("informers", http1) })
			watch := watchEnd(t, client, "informers")
			synctest.Wait()
			c.Do(func(tx *Tx) { tx.Freeze("informers", true, false) })
			advanceFor(c, 5*time.Second)
			c.Do(func(tx *Tx) { tx.DeleteResource("configmaps") })
			advanceFor(c, 20*time.Second)
			synctest.Wait()
			if len(watch) != 0 {
				t.Fatalf("HTTP/1.1 %v: the watch ended while its connection was frozen", http1)
			}
			c.Do(func(tx *Tx) { tx.Freeze("informers", false, true) })
			advanceFor(c, time.Second)
			synctest.Wait()
			select {
			case r := <-watch:
				if !errors.Is(r.err, errConnReset) {
					t.Errorf("HTTP/1.1 %v: the watch ended with %v at the reset, want %v", http1, r.err, errConnReset)
				}
			default:
				t.Errorf("HTTP/1.1 %v: the watch still waits a second after its connection was reset", http1)
			}
			c.Close()
		})
	}
}
