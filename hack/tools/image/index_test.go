package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// archImages writes one image tarball per architecture of a stand-in ELF
// binary, as the release build does for the exporter.
func archImages(t *testing.T, archs ...string) []string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "exporter")
	if err := os.WriteFile(bin, []byte("\x7fELF stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range archs {
		s, err := parseFlags([]string{"-binary", bin, "-name", "example.test/rvsync-slo:1.2.3", "-arch", a, "-out", filepath.Join(dir, a, "image.tar")}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if err := write(s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.out)
	}
	return out
}

// TestIndexPushesEveryArchitecture: `image index` joins the amd64 and
// arm64 tarballs into one image whose index names each platform, writes it
// as an OCI layout and pushes it to a registry (an in-process one here),
// where every platform's image runs the binary as 65532:65532; the digest
// printed is the one the registry serves.
func TestIndexPushesEveryArchitecture(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/rvsync-slo/rvsync-slo:1.2.3"
	dir := filepath.Join(t.TempDir(), "oci")
	var stdout, stderr bytes.Buffer
	args := append([]string{"-layout", dir, "-push", ref, "-insecure"}, archImages(t, "amd64", "arm64")...)
	if code := indexMain(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if first := strings.SplitN(stdout.String(), "\n", 2)[0]; first != tag.Context().Name()+"@"+d.String() {
		t.Errorf("printed %q, want the pushed %s@%s", first, tag.Context().Name(), d)
	}
	local, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	lm, _ := local.IndexManifest()
	if len(lm.Manifests) != 1 {
		t.Fatalf("the layout holds %d indexes, want 1", len(lm.Manifests))
	}
	if ld := lm.Manifests[0].Digest; ld != d {
		t.Errorf("layout index %s, pushed %s", ld, d)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if desc.Platform == nil || desc.Platform.Architecture != cf.Architecture || cf.OS != "linux" {
			t.Errorf("manifest %s: platform %v, config %s/%s", desc.Digest, desc.Platform, cf.OS, cf.Architecture)
		}
		if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/exporter"}) {
			t.Errorf("%s: user %q entrypoint %v", cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
		}
		archs = append(archs, cf.Architecture)
	}
	slices.Sort(archs)
	if !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("platforms %v, want amd64 and arm64", archs)
	}
}

// TestIndexRefusesTwoImagesOfOnePlatform: a build that made the same
// architecture twice (a wrong GOARCH) cannot publish an index that hides it.
func TestIndexRefusesTwoImagesOfOnePlatform(t *testing.T) {
	imgs := archImages(t, "amd64")
	var stdout, stderr bytes.Buffer
	if code := indexMain([]string{"-layout", t.TempDir(), imgs[0], imgs[0]}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "are both linux/amd64") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
