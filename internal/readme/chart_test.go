package readme

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestChartValues(t *testing.T) {
	in := `# file comment

# -- Top level.
# Second line.
name: ""
image:
  # not documentation
  # -- Tag; empty: appVersion.
  tag: ""
  # -- Pull policy.
  pullPolicy: IfNotPresent
# -- Whole object documented at once.
resources:
  limits: {memory: 256Mi}
list:
  # -- Replicas.
  replicas: 1
`
	got, err := ChartValues([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []ChartValue{
		{"name", "string", `""`, "Top level. Second line."},
		{"image.tag", "string", `""`, "Tag; empty: appVersion."},
		{"image.pullPolicy", "string", `"IfNotPresent"`, "Pull policy."},
		{"resources", "object", `{"limits":{"memory":"256Mi"}}`, "Whole object documented at once."},
		{"list.replicas", "int", "1", "Replicas."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := ChartValues([]byte("image:\n  # a plain comment\n  tag: \"\"\n")); err == nil || !strings.Contains(err.Error(), "image.tag (line 3)") {
		t.Errorf("an undocumented key: want an error naming image.tag and its line, got %v", err)
	}
}

// TestChartReadmeIsCurrent: the committed chart README is what the
// generator makes of the committed values.yaml (make verify checks the
// same through git diff).
func TestChartReadmeIsCurrent(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	chart := filepath.Join(filepath.Dir(file), "..", "..", "charts", "rvsync-slo")
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ChartReadme(values)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("charts/rvsync-slo/README.md is out of date: run make generate")
	}
}
