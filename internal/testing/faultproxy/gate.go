package faultproxy

import (
	"sync"
	"time"
)

// gate decides when forwarded data may pass: after an added delay, and
// not while a stall holds. Both proxies forward through one.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	delay   time.Duration
	stalled bool
	closed  bool
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) setDelay(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.delay = d
}

func (g *gate) stall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stalled = true
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stalled = false
	g.cond.Broadcast()
}

// close opens the gate for good and makes every wait report false.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.stalled = false
	g.cond.Broadcast()
}

// wait blocks until data read at `at` may be forwarded. It reports false
// when the gate closed meanwhile.
func (g *gate) wait(at time.Time) bool {
	for {
		g.mu.Lock()
		for g.stalled && !g.closed {
			g.cond.Wait()
		}
		closed, delay := g.closed, g.delay
		g.mu.Unlock()
		if closed {
			return false
		}
		d := time.Until(at.Add(delay))
		if d <= 0 {
			return true
		}
		time.Sleep(min(d, 100*time.Millisecond)) // re-check stalls and delay changes
	}
}
