package sim

import (
	"testing"
	"time"
)

// An operator's informer started late and stopped early is in the truth
// only while it runs and has listed, and the monitor reports the resource
// throughout (its informer_synced says whether every informer synced).
func TestAnInformerStartedLateAndStoppedEarlyIsTruthOnlyWhileItRuns(t *testing.T) {
	r := Watched{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-late", Embedded: true, StartAfter: 2 * time.Minute, StopAfter: 5 * time.Minute}}}
	counts := map[time.Duration]int{}
	var start time.Time
	err := Run(t, Setup{Resources: []Watched{r}}, 1, 7*time.Minute, func(w *World) { start = w.Start }, func(s Scrape) {
		counts[s.At.Sub(start).Truncate(time.Second)] = len(s.Truth[r.Name()].Informers)
	})
	if err != nil {
		t.Fatal(err)
	}
	for at, n := range counts {
		want := 1
		if at > 2*time.Minute+5*time.Second && at < 5*time.Minute {
			want = 2 // listed within a few seconds of its start
		}
		if (at < 2*time.Minute || at > 5*time.Minute || want == 2) && n != want {
			t.Errorf("at %v: %d informers in the truth, want %d", at, n, want)
		}
	}
	if len(counts) < 25 {
		t.Errorf("%d scrapes in 7 minutes, want 28", len(counts))
	}
}
