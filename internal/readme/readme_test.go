package readme

import (
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

func TestReplaceMetricsKeepsTheRest(t *testing.T) {
	in := "# Title\n\nbefore\n" + BeginMetrics + "\nold table\n" + EndMetrics + "\nafter\n"
	out, err := replaceMetrics([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"# Title\n\nbefore\n" + BeginMetrics + "\n| metric |", EndMetrics + "\nafter\n", "`" + catalog.ListDuration.Name + "`"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old table") {
		t.Error("the old table survived")
	}
	if _, err := replaceMetrics([]byte("no markers")); err == nil {
		t.Error("a README without markers was accepted")
	}
}

func TestEveryFamilyIsInTheTable(t *testing.T) {
	table := MetricsTable()
	for _, m := range catalog.All() {
		if !strings.Contains(table, "| `"+m.Name+"` | "+string(m.Type)+" |") {
			t.Errorf("%s missing from the table", m.Name)
		}
	}
}
