//go:build integration

package release_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/release"
)

// EnvVersion, set by `make release-dry-run`, makes a missing build a
// failure instead of a skip.
const envVersion = "RVSYNC_RELEASE_VERSION"

// nonRoot is the user the chart's securityContext runs the image as.
const nonRoot = "65532:65532"

// elfMachine is the ELF machine of each release architecture.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func artifacts(t *testing.T) release.Artifacts {
	t.Helper()
	a, ok, err := release.Find()
	if err != nil {
		t.Fatal(err)
	}
	if want := os.Getenv(envVersion); want != "" && want != a.Version {
		t.Fatalf("the release build is of %s, the chart is %s", want, a.Version)
	}
	if !ok {
		if os.Getenv(envVersion) != "" {
			t.Fatalf("no release build of %s in %s", a.Version, a.Dir)
		}
		t.Skipf("no release build of %s in %s: make release-dry-run", a.Version, a.Dir)
	}
	return a
}

// TestReleaseArtifacts checks what `make release-dry-run` built, as a user
// of the release would meet it: one image per architecture with the
// exporter built for it as `make image` builds it (static, -trimpath, the
// version stamped), run as the nonroot user; the multi-arch image holding
// exactly those; the chart .tgz of the same version, whose defaults run
// that image; SBOMs listing the modules the binary is built from; and
// checksums of it all.
func TestReleaseArtifacts(t *testing.T) {
	a := artifacts(t)
	configs := map[string]string{} // linux/<arch> → config digest
	for _, arch := range release.Architectures {
		t.Run("image "+arch, func(t *testing.T) {
			img, err := release.ReadImage(a.Image(arch))
			if err != nil {
				t.Fatal(err)
			}
			configs["linux/"+arch] = img.ConfigDigest
			if !slices.Equal(img.RepoTags, []string{a.ImageRef()}) {
				t.Errorf("tags %v, want the chart's default image %s", img.RepoTags, a.ImageRef())
			}
			c := img.Config
			if c.OS != "linux" || c.Architecture != arch {
				t.Errorf("platform %s/%s, want linux/%s", c.OS, c.Architecture, arch)
			}
			if c.Config.User != nonRoot || !slices.Equal(c.Config.Entrypoint, []string{"/exporter"}) {
				t.Errorf("user %q entrypoint %v, want %s and [/exporter]", c.Config.User, c.Config.Entrypoint, nonRoot)
			}
			if _, ok := c.Config.ExposedPorts["8080/tcp"]; !ok || len(c.Config.ExposedPorts) != 1 {
				t.Errorf("exposed ports %v, want 8080/tcp", c.Config.ExposedPorts)
			}
			checkLabels(t, a, c.Config.Labels)
			if !strings.Contains(string(img.Files["/etc/passwd"]), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd %q names no nonroot 65532", img.Files["/etc/passwd"])
			}
			bin := img.Files["/exporter"]
			if img.Modes["/exporter"]&0o001 == 0 {
				t.Errorf("/exporter mode %v: others (the run-as user) cannot execute it", img.Modes["/exporter"])
			}
			checkBinary(t, a, arch, bin)
		})
	}
	t.Run("multi-arch image", func(t *testing.T) {
		platforms, err := release.LayoutPlatforms(a.Layout())
		if err != nil {
			t.Fatal(err)
		}
		if len(platforms) != len(release.Architectures) {
			t.Errorf("platforms %v, want one per architecture %v", platforms, release.Architectures)
		}
		for p, d := range configs {
			if platforms[p] != d {
				t.Errorf("%s: the multi-arch image holds config %s, the tarball %s", p, platforms[p], d)
			}
		}
	})
	t.Run("chart", func(t *testing.T) { checkChart(t, a) })
	t.Run("SBOM", func(t *testing.T) {
		for _, arch := range release.Architectures {
			img, err := release.ReadImage(a.Image(arch))
			if err != nil {
				t.Fatal(err)
			}
			checkSBOM(t, a.SBOM(arch), img.Files["/exporter"])
		}
	})
	t.Run("checksums", func(t *testing.T) { checkChecksums(t, a) })
}

// checkBinary: an ELF for arch, static (no interpreter), built from this
// module as `make image` builds it (CGO_ENABLED=0, -trimpath, -s -w, the
// version stamped); the host's also runs and says its version.
func checkBinary(t *testing.T, a release.Artifacts, arch string, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/exporter is not ELF: %v", err)
	}
	if f.Machine != elfMachine[arch] {
		t.Errorf("/exporter is for %v, want %v", f.Machine, elfMachine[arch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/exporter is dynamically linked (it has an interpreter): the image has no libc")
		}
	}
	path := filepath.Join(t.TempDir(), "exporter")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Main.Path != "github.com/rvsync-slo/rvsync-slo" || info.Path != "github.com/rvsync-slo/rvsync-slo/cmd/exporter" {
		t.Errorf("built from %s (%s), want the exporter of this module", info.Path, info.Main.Path)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": arch} {
		if settings[k] != want {
			t.Errorf("build setting %s=%q, want %q", k, settings[k], want)
		}
	}
	// -s -w, as make image links it (-trimpath keeps -ldflags out of the
	// build info): no symbol table, no DWARF
	for _, sec := range []string{".symtab", ".debug_info", ".zdebug_info"} {
		if f.Section(sec) != nil {
			t.Errorf("/exporter has section %s: not linked with -s -w", sec)
		}
	}
	// the version and revision stamped with -X: the host's binary says them,
	// and every architecture's holds the same revision
	host, err := hostRevision(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bin, []byte(host)) {
		t.Errorf("/exporter lacks the revision %s that the %s binary reports", host, runtime.GOARCH)
	}
}

// checkLabels: the org.opencontainers.image.* labels that registries
// (ghcr.io links the package to its source repository by them), scanners
// and Artifact Hub read: the source repository, the release's version, the
// revision the binary was built from, and the license.
func checkLabels(t *testing.T, a release.Artifacts, labels map[string]string) {
	t.Helper()
	host, err := hostRevision(a)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/rvsync-slo/rvsync-slo",
		"org.opencontainers.image.version":  a.Version,
		"org.opencontainers.image.revision": host,
		"org.opencontainers.image.licenses": license,
	} {
		if labels[k] != want {
			t.Errorf("image label %s = %q, want %q", k, labels[k], want)
		}
	}
}

// license is the SPDX identifier of LICENSE, which the image labels and the
// chart's Artifact Hub annotation name.
const license = "Apache-2.0"

// hostRevision runs the release's exporter of the machine's architecture
// with --version, checks it reports the release's version, and returns the
// revision it reports.
func hostRevision(a release.Artifacts) (string, error) {
	img, err := release.ReadImage(a.HostImage())
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "rvsync-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "exporter")
	if err := os.WriteFile(path, img.Files["/exporter"], 0o755); err != nil {
		return "", err
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	var rev string
	if _, scanErr := fmt.Sscanf(string(out), "rvsync exporter "+a.Version+" (revision %40s", &rev); err != nil || scanErr != nil || len(rev) != 40 {
		return "", fmt.Errorf("exporter --version: %q (%v): want version %s and a 40-digit revision", out, err, a.Version)
	}
	return rev, nil
}

// checkChart: the .tgz is the chart of this version, its image the
// release's by default, and it renders with defaults wherever the operator
// runs (monitoring=operator, as GitOps renders it).
func checkChart(t *testing.T, a release.Artifacts) {
	t.Helper()
	b, err := chart.Show("chart", a.Chart())
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Name, Version, AppVersion string }
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Name != chart.Name || meta.Version != a.Version || meta.AppVersion != a.Version {
		t.Errorf("packaged chart %+v, want %s %s with appVersion %s", meta, chart.Name, a.Version, a.Version)
	}
	if err := chart.Lint(chart.Options{Chart: a.Chart(), Values: map[string]any{"monitoring": "operator"}}); err != nil {
		t.Error(err)
	}
	m, err := chart.Template(chart.Options{Chart: a.Chart(), WithoutOperator: true, Values: map[string]any{"monitoring": "operator"}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := m.One("Deployment")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := chart.Into(u, &d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != a.ImageRef() {
		t.Errorf("the chart's default image %s, want the release's %s", img, a.ImageRef())
	}
	if len(m.OfKind("ServiceMonitor")) != 1 || len(m.OfKind("PrometheusRule")) != 1 {
		t.Error("monitoring=operator rendered no ServiceMonitor or PrometheusRule from the .tgz")
	}
	checkArtifactHub(t, a, b)
}

// checkArtifactHub: the packaged chart's Artifact Hub annotations name the
// license, the release's image (which Artifact Hub scans) and this
// version's changes, each of a kind Artifact Hub knows, and the .tgz
// holds the LICENSE.
func checkArtifactHub(t *testing.T, a release.Artifacts, chartYAML []byte) {
	t.Helper()
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		t.Fatal(err)
	}
	an := meta.Annotations
	if an["artifacthub.io/license"] != license {
		t.Errorf("artifacthub.io/license %q, want %s", an["artifacthub.io/license"], license)
	}
	var images []struct{ Name, Image string }
	if err := yaml.Unmarshal([]byte(an["artifacthub.io/images"]), &images); err != nil {
		t.Errorf("artifacthub.io/images: %v", err)
	}
	if len(images) != 1 || images[0].Image != a.ImageRef() || images[0].Name == "" {
		t.Errorf("artifacthub.io/images %+v, want the release's image %s", images, a.ImageRef())
	}
	var changes []struct{ Kind, Description string }
	if err := yaml.Unmarshal([]byte(an["artifacthub.io/changes"]), &changes); err != nil {
		t.Errorf("artifacthub.io/changes: %v", err)
	}
	if len(changes) == 0 {
		t.Error("artifacthub.io/changes lists no change of this version")
	}
	for _, c := range changes {
		if !slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, c.Kind) || c.Description == "" {
			t.Errorf("artifacthub.io/changes entry %+v: want a kind Artifact Hub knows and a description", c)
		}
	}
	files, err := release.TarFiles(a.Chart())
	if err != nil {
		t.Fatal(err)
	}
	if l := string(files[chart.Name+"/LICENSE"]); !strings.Contains(l, "Apache License") || !strings.Contains(l, "Version 2.0, January 2004") {
		t.Errorf("the chart .tgz holds no LICENSE (Apache-2.0): %v", slices.Sorted(maps.Keys(files)))
	}
}

// checkSBOM: an SPDX document whose packages include every module the
// binary was built from, at the version it was built with.
func checkSBOM(t *testing.T, path string, bin []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !strings.HasPrefix(doc.SPDXVersion, "SPDX-2.") {
		t.Errorf("%s: spdxVersion %q", path, doc.SPDXVersion)
	}
	listed := map[string]bool{}
	for _, p := range doc.Packages {
		listed[p.Name+"@"+p.VersionInfo] = true
	}
	f := filepath.Join(t.TempDir(), "exporter")
	if err := os.WriteFile(f, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		if !listed[dep.Path+"@"+dep.Version] {
			missing = append(missing, dep.Path+"@"+dep.Version)
		}
	}
	if len(info.Deps) < 20 || len(missing) > 0 {
		t.Errorf("%s: of the binary's %d modules it lists none of %v", path, len(info.Deps), missing)
	}
}

// checkChecksums: checksums.txt lists the archives, the image tarballs and
// the SBOMs, each with its SHA-256.
func checkChecksums(t *testing.T, a release.Artifacts) {
	t.Helper()
	f, err := os.Open(a.Checksums())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q", sc.Text())
		}
		path := filepath.Join(a.Dir, name)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(a.Dir, "images", name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != sum {
			t.Errorf("%s: sha256 %s, listed %s", name, got, sum)
		}
		listed[name] = true
	}
	for _, arch := range release.Architectures {
		for _, want := range []string{filepath.Base(a.Image(arch)), filepath.Base(a.SBOM(arch)), fmt.Sprintf("rvsync-slo_%s_linux_%s.tar.gz", a.Version, arch)} {
			if !listed[want] {
				t.Errorf("checksums.txt does not list %s", want)
			}
		}
	}
}
