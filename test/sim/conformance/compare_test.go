package conformance

import (
	"testing"
	"time"
)

// A watch-list's initial-events-end bookmark may be echoed by one more at
// the cacher's next dispatch tick (real kube-apiserver, one run in five):
// the comparison skips that echo, and nothing later.
func TestCompareSkipsTheEchoOfAnInitialEventsEnd(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	obs := func(kind, text string, sinceOpen time.Duration) Observation {
		return Observation{Stream: "watchlist", Step: 16, After: sinceOpen, SinceOpen: sinceOpen, Kind: kind, Text: text}
	}
	script := Script{Name: "echo", Steps: make([]Step, 20)}
	model := &Record{Script: script, Observations: []Observation{
		obs("event", "ADDED a@w1", ms(20)),
		obs("bookmark", "BOOKMARK rv=w5+ initial-events-end", ms(60)),
		obs("event", "ADDED d@w6", ms(1000)),
	}}
	for _, c := range []struct {
		name  string
		extra time.Duration
		want  bool // a difference
	}{
		{"a tick after", ms(1100), false},
		{"two ticks after", ms(2600), true},
	} {
		real := &Record{Script: script, Observations: append(append([]Observation(nil), model.Observations...), obs("bookmark", "BOOKMARK rv=w6", c.extra))}
		if diffs := Compare(model, real); (len(diffs) > 0) != c.want {
			t.Errorf("%s: a bookmark %v after the watch-list opened, differences %v, want any: %v", c.name, c.extra, diffs, c.want)
		}
	}
}
