package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// TestInvariantsDocumented keeps the table of docs/simulation.md and the
// checkers in step: every invariant has its row, which names its type and
// the file declaring it; every row but the shipped alerts' is an
// invariant; and every function the table names as a waiver exists in
// test/sim.
func TestInvariantsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/simulation.md")
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rows := map[string]string{} // by first cell
	inTable := false            // the guarantees table: from its "| signal |" header to its last row
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| signal |"):
			inTable = true
		case !strings.HasPrefix(line, "| "):
			inTable = false
		case inTable && !strings.HasPrefix(line, "| --- |"):
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
			rows[first] = line
			table.WriteString(line + "\n")
		}
	}
	for _, inv := range invariants {
		typ := reflect.TypeOf(inv).Name()
		row, ok := rows[inv.row()]
		if !ok {
			t.Errorf("%s: no row %q in docs/simulation.md", typ, inv.row())
			continue
		}
		delete(rows, inv.row())
		file := regexp.MustCompile("`(check_[a-z_]+\\.go)` \\(`" + typ + "`\\) \\|$").FindStringSubmatch(row)
		if file == nil {
			t.Errorf("docs/simulation.md: row %q does not end naming %s's file and type: | `check_….go` (`%s`) |", inv.row(), typ, typ)
			continue
		}
		if src, err := os.ReadFile(file[1]); err != nil || !strings.Contains(string(src), "\ntype "+typ+" struct") {
			t.Errorf("docs/simulation.md: row %q: %s does not declare %s (%v)", inv.row(), file[1], typ, err)
		}
	}
	// the page oracles' rows (pages.go, stages.go) judge the rules, not a
	// signal at a scrape
	delete(rows, "shipped alerts")
	delete(rows, "the stage a page names")
	for row := range rows {
		t.Errorf("docs/simulation.md: row %q has no invariant", row)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, m := range regexp.MustCompile("`([a-z]+[A-Z][A-Za-z]*)`").FindAllStringSubmatch(table.String(), -1) {
		if !regexp.MustCompile(`\n(func (\([^)]*\) )?` + m[1] + `\(|type ` + m[1] + ` struct|\t` + m[1] + ` += )`).MatchString(src.String()) {
			t.Errorf("docs/simulation.md names %s, which test/sim does not define", m[1])
		}
	}
}

// TestCheckerReplays: a checker's verdicts are a function of the history
// and its scrapes alone. Checkers fed a history's scrapes afterwards agree
// with those that checked them live, also on the scrapes with their
// signals pushed past every bound (so that the invariants have something
// to report). An invariant keeping state of its own in the package's
// invariants, shared by every checker, would fail it.
func TestCheckerReplays(t *testing.T) {
	h := Generate(2, 10*time.Minute)
	var scrapes []Scrape
	var live, liveBroken *Checker
	var broken []Violation
	err := Run(t, h.Setup, h.Seed, h.Duration, func(w *World) {
		live, liveBroken = NewChecker(&h, w.Start), NewChecker(&h, w.Start)
		h.script(w)
	}, func(s Scrape) {
		scrapes = append(scrapes, s)
		live.Check(s)
		s.Families = pastBounds(s.Families)
		liveBroken.Check(s)
		broken = append(broken, liveBroken.Violations...)
		liveBroken.Violations = nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) == 0 {
		t.Fatal("no violation on scrapes past every bound")
	}
	for run := range 2 {
		plain, past := NewChecker(&h, live.start), NewChecker(&h, live.start)
		var all []Violation
		for _, s := range scrapes {
			plain.Check(s)
			s.Families = pastBounds(s.Families)
			past.Check(s)
			all = append(all, past.Violations...)
			past.Violations = nil
		}
		if !reflect.DeepEqual(plain.Violations, live.Violations) || plain.Excess != live.Excess {
			t.Errorf("replay %d: %v (healthy excess %v), live: %v (%v)", run+1, plain.Violations, plain.Excess, live.Violations, live.Excess)
		}
		if !reflect.DeepEqual(all, broken) {
			t.Errorf("replay %d past every bound: %v, live: %v", run+1, rulesOf(all), rulesOf(broken))
		}
	}
}

// pastBounds returns mfs with the signals the invariants bound pushed
// past them: staleness, lag, silence and the proof period high, a
// regression more, the state head_unknown.
func pastBounds(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, len(mfs))
	for i, mf := range mfs {
		out[i] = mf
		switch mf.GetName() {
		case catalog.CacheStaleness.Name, catalog.ResourceVersionLag.Name, catalog.WatchSilence.Name, catalog.FreshnessProofPeriod.Name, catalog.ResourceVersionRegressions.Name, catalog.ResourceState.Name:
		default:
			continue
		}
		out[i] = proto.Clone(mf).(*dto.MetricFamily)
		for _, m := range out[i].Metric {
			switch {
			case mf.GetName() == catalog.ResourceState.Name:
				up := 0.0
				for _, l := range m.GetLabel() {
					if l.GetName() == catalog.LabelState && l.GetValue() == catalog.StateHeadUnknown {
						up = 1
					}
				}
				m.Gauge.Value = proto.Float64(up)
			case m.Counter != nil:
				m.Counter.Value = proto.Float64(m.Counter.GetValue() + 1)
			case m.Gauge != nil:
				m.Gauge.Value = proto.Float64(m.Gauge.GetValue() + 1e5)
			}
		}
	}
	return out
}

func rulesOf(vs []Violation) map[string]int {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Rule]++
	}
	return n
}
