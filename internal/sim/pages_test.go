package sim

import (
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/sim/model"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// pageCorpus are histories whose pages were once false or missed, as
// TestRandomPages found them (as data: the generator may change).
var pageCorpus = []struct {
	name string
	h    History
}{
	{
		// the List-latency SLI counted the informer's 404s while the
		// resource was not served as failed Lists: a resource that lists
		// rarely burned its whole budget in ten seconds and paged
		name: "deleted resource pages List latency (seed 12)",
		h: History{Seed: 12, Duration: 116 * time.Minute, Background: 10,
			Setup:  Setup{Canary: "configmaps", NoFreshnessReads: true, Etcds: []model.EtcdSpec{{Name: "main", Revision: 1000, ProgressNotify: 5 * time.Second}}, Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 116 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: DeleteCRD, Start: 1982 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}, {Kind: DeleteCRD, Start: 6602 * time.Second, Dur: 10 * time.Second, Resource: "configmaps"}},
		},
	},
}

func TestPageCorpus(t *testing.T) {
	for _, c := range pageCorpus {
		t.Run(c.name, func(t *testing.T) {
			var scrapes []Scrape
			if _, err := runHistory(t, c.h, func(s Scrape) { scrapes = append(scrapes, s) }); err != nil {
				t.Fatal(err)
			}
			fired, err := EvaluateRules(slo.DefaultSpec(), scrapes, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range CheckPages(c.h, scrapes, fired) {
				t.Errorf("%v", v)
			}
		})
	}
}
