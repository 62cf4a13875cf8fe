package alerts

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

var update = flag.Bool("update", false, "rewrite testdata/out-*.yaml from the generator")

// TestGolden renders each testdata/in-*.yaml spec (JSON field names, as in
// the chart values) and compares the result with testdata/out-*.yaml.
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/in-*.yaml")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no testdata/in-*.yaml: %v", err)
	}
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var spec slo.Spec
			if err := yaml.UnmarshalStrict(b, &spec); err != nil {
				t.Fatal(err)
			}
			got, err := Render(spec)
			if err != nil {
				t.Fatal(err)
			}
			out := strings.Replace(in, "in-", "out-", 1)
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run go test ./alerts -run TestGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Render(%s) differs from %s; run go test ./alerts -run TestGolden -update and review the diff", in, out)
			}
		})
	}
}
