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
// generator makes of the committed values.yaml and Chart.yaml (make verify
// checks the same through git diff).
func TestChartReadmeIsCurrent(t *testing.T) {
	chart := chartDir(t)
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ChartVersion(chart)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ChartReadme(values, v)
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

func chartDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "rvsync-slo")
}

// TestChartReadmeFirstScreen: what `helm show readme` and Artifact Hub show
// first (the first 40 lines, a screen) holds the license, the install
// command of the published chart at this version with the
// kube-prometheus-stack settings, and no local chart path (issue #40: it
// said `helm install rvsync-slo ./charts/rvsync-slo` without
// slo.retention and slo.budgetPeriod).
func TestChartReadmeFirstScreen(t *testing.T) {
	chart := chartDir(t)
	b, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ChartVersion(chart)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	screen := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{
		"License: " + License,
		"helm install rvsync-slo " + ChartRef + " --version " + v + " -n monitoring",
		"--set releaseLabel=kube-prometheus-stack",
		"--set slo.retention=10d --set slo.budgetPeriod=7d",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the chart README's first 40 lines lack %q:\n%s", want, screen)
		}
	}
	if strings.Contains(string(b), "./charts/") {
		t.Error("the chart README names a local chart path: a user installs the published chart")
	}
}

// TestInstallsAreShared: the README's install section is the chart
// README's, for the same version.
func TestInstallsAreShared(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ChartVersion(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceBetween(b, BeginInstall, EndInstall, InstallMarkdown(v, "###"))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b) {
		t.Error("README.md's install section is out of date: run make generate")
	}
	chartReadme, err := os.ReadFile(filepath.Join(chartDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(chartReadme), InstallMarkdown(v, "###")) {
		t.Error("the chart README does not hold the README's installs")
	}
}
