package sim

import (
	"testing"
	"time"
)

// Shrinking keeps exactly what the failure needs: here a restore and a
// load on configmaps, failing from 5 minutes on.
func TestShrinkKeepsWhatTheFailureNeeds(t *testing.T) {
	h := Generate(3, 40*time.Minute)
	h.Duration = 40 * time.Minute
	h.Background = 1000
	h.Setup.Canary = "secrets"
	h.Setup.Resources = []Watched{resConfigMaps, resSecrets, resDeploys, resEvents}
	h.Loads = []Load{
		{Resource: "secrets", End: 40 * time.Minute, Rate: 5, Keys: 20},
		{Resource: "configmaps", End: 40 * time.Minute, Rate: 0.5, Keys: 5},
		{Resource: "deployments.apps", End: 40 * time.Minute, Rate: 0.05, Keys: 1},
	}
	h.Faults = []Fault{
		{Kind: Freeze, Start: time.Minute, Dur: time.Minute, Host: "informers"},
		{Kind: Restore, Start: 4 * time.Minute, Dur: 20 * time.Second, Back: 5000},
		{Kind: Restart, Start: 10 * time.Minute, Dur: time.Minute},
	}
	runs := 0
	fails := func(c History) (time.Duration, bool) {
		runs++
		restore, load := false, false
		for _, f := range c.Faults {
			restore = restore || f.Kind == Restore
		}
		for _, l := range c.Loads {
			load = load || l.Resource == "configmaps" && l.End > 5*time.Minute
		}
		return 5 * time.Minute, restore && load && c.Duration > 5*time.Minute
	}
	got := shrink(h, fails)
	if len(got.Faults) != 1 || got.Faults[0].Kind != Restore {
		t.Errorf("faults %v, want the restore alone", got.Faults)
	}
	if len(got.Loads) != 1 || got.Loads[0].Resource != "configmaps" {
		t.Errorf("loads %v, want configmaps' alone", got.Loads)
	}
	if got.Duration != 6*time.Minute {
		t.Errorf("duration %v, want 6m (a minute after the failure)", got.Duration)
	}
	if got.Background != 0 || got.Setup.Canary != "" {
		t.Errorf("background %v, canary %q: neither is needed", got.Background, got.Setup.Canary)
	}
	if len(got.Setup.Resources) != 1 || got.Setup.Resources[0].Name() != "configmaps" {
		var names []string
		for _, r := range got.Setup.Resources {
			names = append(names, r.Name())
		}
		t.Errorf("resources %v, want configmaps alone", names)
	}
	if _, ok := fails(got); !ok {
		t.Error("the shrunk history no longer fails")
	}
	t.Logf("%d runs: %#v", runs, got)
}
