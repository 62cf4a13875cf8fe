package sim

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// Draws names exactly the widened dimensions a history drew: none in the
// default world, and with one dimension widened, that one only, in some
// histories and not all (the shares make test-sim reports).
func TestDrawsNamesTheDimensionsAHistoryDrew(t *testing.T) {
	saved := maps.Clone(Widened)
	t.Cleanup(func() { clear(Widened); maps.Copy(Widened, saved) })
	const seeds = 200
	for _, only := range append([]string{""}, Dimensions...) {
		clear(Widened)
		if only != "" {
			Widened[only] = true
		}
		drew := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			names := Generate(seed, 40*time.Minute).Draws()
			if len(names) > 1 || len(names) == 1 && names[0] != only {
				t.Fatalf("widened %q: seed %d drew %v", only, seed, names)
			}
			if slices.Contains(names, only) {
				drew++
			}
		}
		if only != "" && (drew == 0 || drew == seeds) {
			t.Errorf("widened %q: %d of %d histories drew it; want some, not all", only, drew, seeds)
		}
	}
}
