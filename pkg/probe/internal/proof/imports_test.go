package proof

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImports keeps the core pure: it imports the standard library and
// nothing else (no informer, client or metrics package can creep in).
func TestCoreImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const self = "github.com/rvsync-slo/rvsync-slo/pkg/probe/internal/proof"
	for _, p := range strings.Fields(string(out)) {
		if p != self {
			t.Errorf("the proof core imports %s; it may import only the standard library", p)
		}
	}
}
