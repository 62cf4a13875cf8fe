package e2e

import (
	"testing"
	"time"
)

// The truth's judgements of scripted histories: what a sampler that sends
// once per span must have seen, and the staleness range of writes that
// waited in an election.
func TestTruthJudgements(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

	t.Run("sustained List wait", func(t *testing.T) {
		// Lists every 200 ms; those sent in [1000, 2000] ms wait until 3000
		// ms (a freeze), one sent at 400 ms is caught in a 2.5 s retry.
		g := &truth{}
		for ms := 0; ms <= 5000; ms += 200 {
			d := sec(0.01)
			switch {
			case ms == 400:
				d = sec(2.5)
			case ms >= 1000 && ms <= 2000:
				d = at(3000).Sub(at(ms))
			}
			g.lists = append(g.lists, timedCall{at: at(ms), d: d})
		}
		// Any 1 s stretch inside the freeze: its last List waited 1 s.
		if got := g.sustainedList(at(0), at(5000), time.Second); got != time.Second {
			t.Errorf("sustainedList over 1s stretches = %v, want 1s", got)
		}
		// A 1.6 s stretch always holds a fast List: nothing is proven.
		if got := g.sustainedList(at(0), at(5000), sec(1.6)); got != sec(0.01) {
			t.Errorf("sustainedList over 1.6s stretches = %v, want 10ms (the single 2.5s retry proves nothing)", got)
		}
	})

	t.Run("staleness range", func(t *testing.T) {
		// Writes every 200 ms, delivered 10 ms after sending and answered
		// 50 ms after; the ones sent in [1000, 3000) ms wait for an election
		// and are delivered at 3000 ms, answered at 3100 ms. The window ends
		// at 4200 ms, with no delivery after 3000 ms.
		g := &truth{}
		var rv uint64
		for ms := 0; ms < 3000; ms += 200 {
			rv++
			delivered, acked := at(ms+10), at(ms+50)
			if ms >= 1000 {
				delivered, acked = at(3000), at(3100)
			}
			g.writes = append(g.writes, &truthWrite{sent: at(ms), acked: acked, rv: rv})
			g.deliveries = append(g.deliveries, delivery{rv: rv, at: delivered})
		}
		got := g.staleness(at(0), at(4200))
		// Just before 3000 ms the newest delivered write was sent at 800 ms
		// and delivered at 810 ms: 2.19–2.2 s. At the window's end the newest
		// was sent at 2800 ms and committed by 3000 ms: 1.2–1.4 s.
		if want := sec(2.19); got.low != want {
			t.Errorf("low = %v, want %v", got.low, want)
		}
		if want := sec(2.2); got.high != want {
			t.Errorf("high = %v, want %v", got.high, want)
		}
		if got := g.staleness(at(3500), at(4200)); got.low != sec(1.2) || got.high != sec(1.4) {
			t.Errorf("after the election: %v–%v, want 1.2s–1.4s", got.low, got.high)
		}

		// A List sent at 1500 ms in the election answers at 2600 ms with the
		// head before it, which the informer reached at 810 ms: from 2600 ms
		// the cache is known fresh as of 1500 ms, though no write arrived.
		g.reached = g.deliveries
		g.lists = append(g.lists, timedCall{at: at(1500), d: sec(1.1), rv: g.writes[4].rv})
		got = g.staleness(at(0), at(4200))
		if want := sec(1.79); got.low != want {
			t.Errorf("with the List: low = %v, want %v", got.low, want)
		}
		if want := sec(2.2); got.high != want {
			t.Errorf("with the List: high = %v, want %v (the canary alone)", got.high, want)
		}
	})
}
