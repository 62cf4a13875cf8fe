package sim

import (
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/sim/model"
)

var configmaps = Watched{ResourceSpec: model.ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}}

func TestFirst(t *testing.T) {
	setup := Setup{Resources: []Watched{configmaps}, Canary: "configmaps"}
	start := time.Now()
	n := 0
	err := Run(t, setup, 1, 40*time.Minute, func(w *World) {
		c := w.Cluster
		for s := 1; s < 2400; s++ {
			at := w.Start.Add(time.Duration(s)*time.Second + 300*time.Millisecond)
			c.At(at, func(tx *model.Tx) {
				tx.Others(model.MainEtcd, 50)
				if s%7 == 0 {
					if tx.Update("configmaps", "ns", "a", nil) == nil {
						tx.Create("configmaps", "ns", "a", nil)
					}
				}
			})
		}
		c.At(w.Start.Add(20*time.Minute), func(tx *model.Tx) { tx.Freeze(HostInformers, true, false) })
		c.At(w.Start.Add(25*time.Minute), func(tx *model.Tx) { tx.Freeze(HostInformers, false, false) })
	}, func(s Scrape) {
		n++
		st, ok := Value(s.Families, "rvsync_cache_staleness_seconds", "resource", "configmaps")
		tr := s.Truth["configmaps"].Informers[0]
		truth := s.At.Sub(tr.Fresh).Seconds()
		if n%8 == 0 || (ok && st < truth-0.001) {
			t.Logf("%v staleness %v (%v) truth %.1f missing %d live %v | %s", s.At.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), st, ok, truth, tr.Missing, tr.Live, Dump(s, "configmaps"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wall %v", time.Since(start))
}
