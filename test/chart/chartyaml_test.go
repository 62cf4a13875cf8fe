package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// TestArtifactHubAnnotations: Chart.yaml's Artifact Hub annotations name
// the license of LICENSE, the image of this version (appVersion, which the
// chart runs by default and the scanner scans) and changes of kinds
// Artifact Hub knows; CHANGELOG.md has the version's section they sum up;
// the chart carries LICENSE. The release test checks the same in the
// packaged chart.
func TestArtifactHubAnnotations(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	an := meta.Annotations
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Apache License") || !strings.Contains(string(license), "Version 2.0, January 2004") || an["artifacthub.io/license"] != "Apache-2.0" {
		t.Errorf("artifacthub.io/license %q: want Apache-2.0, the license of LICENSE", an["artifacthub.io/license"])
	}
	if copied, err := os.ReadFile(filepath.Join(dir, "LICENSE")); err != nil || string(copied) != string(license) {
		t.Errorf("charts/rvsync-slo/LICENSE is not LICENSE (%v): run make generate", err)
	}
	var images []struct{ Name, Image string }
	if err := yaml.Unmarshal([]byte(an["artifacthub.io/images"]), &images); err != nil {
		t.Fatal(err)
	}
	if want := "ghcr.io/rvsync-slo/rvsync-slo:" + meta.AppVersion; len(images) != 1 || images[0].Image != want {
		t.Errorf("artifacthub.io/images %+v: want one, %s", images, want)
	}
	var changes []struct{ Kind, Description string }
	if err := yaml.Unmarshal([]byte(an["artifacthub.io/changes"]), &changes); err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		t.Error("artifacthub.io/changes is empty")
	}
	for _, c := range changes {
		if !slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, c.Kind) || c.Description == "" {
			t.Errorf("change %+v: want a kind Artifact Hub knows and a description", c)
		}
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "\n## "+meta.AppVersion+"\n") {
		t.Errorf("CHANGELOG.md has no section ## %s for the changes annotation", meta.AppVersion)
	}
}
