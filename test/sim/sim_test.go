package sim

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

var (
	histories = flag.Int("sim.histories", 0, "random histories to run (0: the tier's budget, see budget)")
	firstSeed = flag.Uint64("sim.seed", 1, "seed of the first random history")
	longest   = flag.Duration("sim.duration", 0, "longest random history (0: the tier's budget, see budget)")
	widen     = flag.String("sim.widen", "", "comma-separated dimensions random histories draw beyond the default (Widen* in generate.go: "+strings.Join(Dimensions, ", ")+"), or all")
)

// widened applies -sim.widen (flags are parsed by the time a test runs).
func widened(t *testing.T) {
	for _, d := range strings.Split(*widen, ",") {
		switch {
		case d == "":
		case d == "all":
			for _, d := range Dimensions {
				Widened[d] = true
			}
		case slices.Contains(Dimensions, d):
			Widened[d] = true
		default:
			t.Fatalf("-sim.widen: no dimension %q (want all, or some of %s)", d, strings.Join(Dimensions, ", "))
		}
	}
}

// draws counts how many of a run's histories drew each widened
// dimension: the share of the world a run saw.
type draws struct {
	histories int
	n         map[string]int
}

func (d *draws) add(h History) {
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.histories++
	for _, name := range h.Draws() {
		d.n[name]++
	}
}

// String is "drew: order 61.2%, informers 83.0%, ..." over the dimensions
// Widened holds ("drew: the default world only" when none).
func (d draws) String() string {
	var parts []string
	for _, name := range Dimensions {
		if Widened[name] {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", name, 100*float64(d.n[name])/float64(max(1, d.histories))))
		}
	}
	if len(parts) == 0 {
		return "drew: the default world only"
	}
	return "drew: " + strings.Join(parts, ", ")
}

// budget is how many random histories a run checks, and how long the
// longest lasts, unless -sim.histories and -sim.duration say: make
// test-unit's (-short) 1,000 of at most 10 simulated minutes, make test's
// 200 of at most 40; under the race detector, which slows the simulation
// tenfold, 20 (they check the probe's locking under the model's
// concurrency, not the signals' breadth).
func budget() (n int, dur time.Duration) {
	switch {
	case raceEnabled:
		n, dur = 20, 10*time.Minute
	case testing.Short():
		n, dur = 1000, 10*time.Minute
	default:
		n, dur = 200, 40*time.Minute
	}
	if *histories > 0 {
		n = *histories
	}
	if *longest > 0 {
		dur = *longest
	}
	return n, dur
}

func TestRandomHistories(t *testing.T) {
	widened(t)
	start := time.Now()
	failed := 0
	var excess time.Duration
	var simulated time.Duration
	rules := map[string][]uint64{}
	var drew draws
	n, longestHistory := budget()
	for i := range n {
		seed := *firstSeed + uint64(i)
		h := Generate(seed, longestHistory)
		drew.add(h)
		began := time.Now()
		chk, err := RunHistory(t, h)
		if testing.Verbose() {
			t.Logf("seed %d: %s in %v, %d violations", seed, h.Duration, time.Since(began).Round(time.Millisecond), len(chk.Violations))
		}
		simulated += h.Duration
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		excess = max(excess, chk.Excess)
		seen := map[string]bool{}
		for _, v := range chk.Violations {
			if !seen[v.Rule] {
				seen[v.Rule] = true
				rules[v.Rule] = append(rules[v.Rule], seed)
			}
		}
		if len(chk.Violations) > 0 {
			failed++
			if failed <= 5 {
				t.Errorf("seed %d: %d violations, first: %v\nhistory: %#v\ntrace it: go test -run TestSeed ./test/sim -sim.one=%d -sim.duration=%v (add -sim.shrink for a corpus entry, -sim.runs=20 if one run passes)", seed, len(chk.Violations), chk.Violations[0], h, seed, longestHistory)
				for _, v := range chk.Violations[1:min(5, len(chk.Violations))] {
					t.Logf("  %v", v)
				}
			}
		}
	}
	for rule, seeds := range rules {
		t.Logf("%s: %d histories, seeds %v", rule, len(seeds), seeds[:min(len(seeds), 12)])
	}
	t.Logf("%d histories (%s simulated) in %v, %d failed; healthy staleness at most %v above the truth; %v", n, simulated, time.Since(start).Round(time.Millisecond), failed, excess, drew)
}

var (
	pageHistories = flag.Int("sim.pages", -1, "TestRandomPages: random histories whose pages to judge (-1: the tier's budget)")
	pageDuration  = flag.Duration("sim.pageduration", 3*time.Hour, "TestRandomPages: longest of those histories")
)

// TestRandomPages runs random histories hours long, evaluates the shipped
// rules on what each scraped, as Prometheus would every 30s, and judges the
// pages against the truth (CheckPages): a healthy resource never pages, a
// stale store or a stalled watch pages within its documented time.
//
// The fast tier (-short) runs none: three quarters of a page history's
// time is Prometheus evaluating the rules (their 1d and 3d windows read the
// whole history at every step), and TestPageCorpus already judges pages on
// every edit; make test runs 10, make test-sim 1,000.
func TestRandomPages(t *testing.T) {
	widened(t)
	n := *pageHistories
	if n < 0 {
		switch {
		case raceEnabled:
			t.Skip("the race budget checks locking, not pages")
		case testing.Short():
			t.Skip("the fast tier judges pages in TestPageCorpus; make test runs 10 random page histories")
		default:
			n = 10
		}
	}
	start := time.Now()
	var simulated time.Duration
	failed, pages, judged := 0, 0, 0
	var drew draws
	for i := range n {
		seed := *firstSeed + uint64(i)
		h := Generate(seed, *pageDuration)
		drew.add(h)
		var scrapes []Scrape
		if _, err := runHistory(t, h, func(s Scrape) { scrapes = append(scrapes, s) }); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		simulated += h.Duration
		fired, err := EvaluateRules(slo.DefaultSpec(), scrapes, 30*time.Second)
		if err != nil {
			t.Fatalf("seed %d: rules: %v", seed, err)
		}
		for _, f := range fired {
			if f.Page() {
				pages++
			}
		}
		stages := CheckStages(h, scrapes, fired)
		judged += stages.Judged
		if vs := append(CheckPages(h, scrapes, fired), stages.Violations...); len(vs) > 0 {
			failed++
			if failed > 5 { // every failing seed, the history of the first five
				t.Errorf("seed %d: %d page violations, first: %v", seed, len(vs), vs[0])
				continue
			}
			t.Errorf("seed %d: %d page violations, first: %v\nhistory: %#v\ntrace it: go test -run TestSeed ./test/sim -sim.one=%d -sim.duration=%v -sim.rules=30s", seed, len(vs), vs[0], h, seed, *pageDuration)
			for _, v := range vs[1:min(5, len(vs))] {
				t.Logf("  %v", v)
			}
		}
	}
	t.Logf("%d histories (%s simulated) with the shipped rules in %v: %d pages, %d of them with their stage judged, %d histories with a false or missed page or a page naming a wrong stage; %v", n, simulated, time.Since(start).Round(time.Millisecond), pages, judged, failed, drew)
}

var (
	one   = flag.Uint64("sim.one", 0, "TestSeed: the seed of the random history to run and trace")
	lie   = flag.String("sim.lie", "", "TestSeed: run and trace the lie (TestLies) whose name holds this")
	kept  = flag.Uint64("sim.corpus", 0, "TestSeed: run and trace the corpus history (TestCorpus or TestPageCorpus) of this seed")
	trace = flag.String("sim.trace", "configmaps", "TestSeed: the resource whose signals and truth to log at every scrape")
	runs  = flag.Int("sim.runs", 1, "TestSeed: run the history this many times (the first traced) and say how many runs broke an invariant: a seed replays, so all or none should")
	// shrinkIt is what turns a failing seed into a corpus entry.
	verbosity = flag.Int("sim.v", 0, "TestSeed: log the monitor's own logs up to this verbosity (2: every head sample and canary write with its verdict)")
	shrinkIt  = flag.Bool("sim.shrink", false, "TestSeed: when the history fails, shrink it to the smallest history that still breaks its first invariant and log it as Go source")
)

// TestSeed runs one random history and logs, at every scrape, the signals
// of one resource beside the truth: how to read a failing seed.
func TestSeed(t *testing.T) {
	widened(t)
	var h History
	switch {
	case *one != 0:
		_, dur := budget()
		h = Generate(*one, dur)
	case *lie != "":
		for _, l := range lies {
			if strings.Contains(l.name, *lie) {
				h = l.h
			}
		}
	case *kept != 0:
		for _, c := range corpus {
			if c.h.Seed == *kept {
				h = c.h
			}
		}
		for _, c := range pageCorpus {
			if c.h.Seed == *kept {
				h = c.h
			}
		}
	default:
		t.Skip("-sim.one=SEED runs that random history, -sim.lie=TEXT the lie whose name holds TEXT, -sim.corpus=SEED the corpus history of that seed")
	}
	t.Logf("%#v", h)
	if *verbosity > 0 {
		monitorLog = funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: *verbosity})
		defer func() { monitorLog = logr.Discard() }()
	}
	var scrapes []Scrape
	chk, err := runHistory(t, h, func(s Scrape) {
		scrapes = append(scrapes, s)
		if h.Setup.Servers > 1 {
			t.Logf("%7.1fs routes (host: API servers) %v", s.At.Sub(epoch).Seconds(), s.Routes)
		}
		for _, it := range s.Truth[*trace].Informers {
			t.Logf("%7.1fs %s | truth %s: fresh -%.1fs missing %d reverted %v live %v waiting %v bm %v stuck %v lost %v rv %d last -%.1fs listed -%.1fs", s.At.Sub(epoch).Seconds(), Dump(s, *trace), it.Host,
				s.At.Sub(it.Fresh).Seconds(), it.Missing, it.Reverted, it.Live, it.Waiting, it.Bookmarks, it.Stuck, it.LostHistory, it.RV, s.At.Sub(it.Last).Seconds(), s.At.Sub(it.ListedAt).Seconds())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range chk.Violations {
		t.Errorf("%v", v)
	}
	if *runs > 1 {
		// a seed fixes the order of what happens at one instant too (the
		// model's turns): a run that differs is a bug of the simulation
		failed := 0
		for range *runs - 1 {
			again, err := RunHistory(t, h)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Violations) > 0 {
				failed++
				if len(chk.Violations) == 0 {
					chk = again
					t.Errorf("a later run: %v", again.Violations[0])
				}
			}
		}
		t.Logf("%d of %d more runs of the history broke an invariant", failed, *runs-1)
	}
	if *shrinkIt && len(chk.Violations) > 0 {
		v := chk.Violations[0]
		began := time.Now()
		small := Shrink(t, h, v.Rule, v.Resource)
		t.Logf("shrunk in %v to a history that still breaks %q on %s; keep it in the corpus:\n%#v", time.Since(began).Round(time.Millisecond), v.Rule, v.Resource, small)
	}
	if *rulesEvery > 0 {
		began := time.Now()
		fired, err := EvaluateRules(slo.DefaultSpec(), scrapes, *rulesEvery)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fired {
			t.Logf("fired: %v", f)
		}
		t.Logf("rules evaluated in %v", time.Since(began))
		// judged as TestRandomPages judges it, so its "trace it" line
		// shows the same false or missed pages
		for _, v := range CheckPages(h, scrapes, fired) {
			t.Errorf("page: %v", v)
		}
		stages := CheckStages(h, scrapes, fired)
		for _, v := range stages.Violations {
			t.Errorf("page: %v", v)
		}
		t.Logf("%d pages with their stage judged", stages.Judged)
	}
}

// epoch is when every synctest bubble's clock starts.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

var rulesEvery = flag.Duration("sim.rules", 0, "TestSeed: evaluate the shipped rules every this often on the history's scrapes, log what fired and judge the pages (false and missed)")
