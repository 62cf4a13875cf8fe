package release

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// EnvDir names the directory of the release build; the Makefile sets it
// (dist/ of the repository).
const EnvDir = "RVSYNC_RELEASE_DIR"

// ImageRepository is where the exporter image is published; the chart's
// default image is ImageRepository:<appVersion>.
const ImageRepository = "ghcr.io/rvsync-slo/rvsync-slo"

// Architectures are the platforms a release builds, each linux/<arch>.
var Architectures = []string{"amd64", "arm64"}

// Artifacts are the files of the release build of one version in Dir.
type Artifacts struct {
	Dir, Version string
}

// Find returns the release build of the chart's version in $RVSYNC_RELEASE_DIR
// (else the repository's dist/); ok is false when there is none (no chart
// .tgz of that version).
func Find() (a Artifacts, ok bool, err error) {
	a.Dir = os.Getenv(EnvDir)
	if a.Dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return a, false, err
		}
		a.Dir = filepath.Join(root, "dist")
	}
	if a.Version, err = chart.Version(); err != nil {
		return a, false, err
	}
	if _, err := os.Stat(a.Chart()); errors.Is(err, os.ErrNotExist) {
		return a, false, nil
	} else if err != nil {
		return a, false, err
	}
	return a, true, nil
}

// Chart is the packaged chart.
func (a Artifacts) Chart() string {
	return filepath.Join(a.Dir, fmt.Sprintf("%s-%s.tgz", chart.Name, a.Version))
}

// Image is the image tarball of an architecture.
func (a Artifacts) Image(arch string) string {
	return filepath.Join(a.Dir, "images", fmt.Sprintf("rvsync-slo_%s_linux_%s.tar", a.Version, arch))
}

// HostImage is the image tarball of the machine's architecture.
func (a Artifacts) HostImage() string { return a.Image(runtime.GOARCH) }

// Layout is the OCI image layout of the multi-arch image.
func (a Artifacts) Layout() string { return filepath.Join(a.Dir, "images", "oci") }

// SBOM is the SPDX SBOM of an architecture's exporter binary.
func (a Artifacts) SBOM(arch string) string {
	return filepath.Join(a.Dir, fmt.Sprintf("exporter_%s_linux_%s.spdx.json", a.Version, arch))
}

// Checksums is the SHA-256 list of the artifacts, which the release signs.
func (a Artifacts) Checksums() string { return filepath.Join(a.Dir, "checksums.txt") }

// ImageRef is the name the image tarballs carry: the chart's default image.
func (a Artifacts) ImageRef() string { return ImageRepository + ":" + a.Version }

// ImageConfig is the part of an image's config file the checks read.
type ImageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
}

// Image is one image of a docker-archive tarball, read with the standard
// library alone (not the tool that wrote it).
type Image struct {
	RepoTags []string
	Config   ImageConfig
	// ConfigDigest is sha256:<hex> of the config file: the image ID.
	ConfigDigest string
	// Files are the regular files of its layers by absolute path.
	Files map[string][]byte
	// Modes are their permission bits.
	Modes map[string]os.FileMode
}

// ReadImage reads the one image of a docker-archive tarball.
func ReadImage(path string) (*Image, error) {
	entries, err := tarEntries(path)
	if err != nil {
		return nil, err
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %w", path, err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("%s: %d images, want 1", path, len(manifest))
	}
	m := manifest[0]
	img := &Image{RepoTags: m.RepoTags, Files: map[string][]byte{}, Modes: map[string]os.FileMode{}}
	cfg, ok := entries[m.Config]
	if !ok {
		return nil, fmt.Errorf("%s: no config %s", path, m.Config)
	}
	if err := json.Unmarshal(cfg, &img.Config); err != nil {
		return nil, fmt.Errorf("%s: config: %w", path, err)
	}
	img.ConfigDigest = digestOf(cfg)
	for _, l := range m.Layers {
		data, ok := entries[l]
		if !ok {
			return nil, fmt.Errorf("%s: no layer %s", path, l)
		}
		if err := readLayer(data, img); err != nil {
			return nil, fmt.Errorf("%s: layer %s: %w", path, l, err)
		}
	}
	return img, nil
}

// tarEntries returns the regular files of a tar file by name.
func tarEntries(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// TarFiles returns the regular files of a gzip-compressed tarball (a
// packaged chart) by their path in it.
func TarFiles(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// readLayer adds the files of a (gzip-compressed or plain) layer tarball.
func readLayer(data []byte, img *Image) error {
	var r io.Reader = strings.NewReader(string(data))
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(strings.NewReader(string(data)))
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		p := "/" + strings.TrimPrefix(h.Name, "./")
		if img.Files[p], err = io.ReadAll(tr); err != nil {
			return err
		}
		img.Modes[p] = os.FileMode(h.Mode).Perm()
	}
}

func digestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// LayoutPlatforms reads the OCI image layout dir whose index.json names
// one multi-arch image, and returns its platforms (linux/amd64) with the
// config digest of each platform's image. Every blob read is checked
// against its digest.
func LayoutPlatforms(dir string) (map[string]string, error) {
	blob := func(d string) ([]byte, error) {
		alg, hex, ok := strings.Cut(d, ":")
		if !ok || alg != "sha256" {
			return nil, fmt.Errorf("digest %q: want sha256:<hex>", d)
		}
		b, err := os.ReadFile(filepath.Join(dir, "blobs", alg, hex))
		if err != nil {
			return nil, err
		}
		if got := digestOf(b); got != d {
			return nil, fmt.Errorf("blob %s holds %s", d, got)
		}
		return b, nil
	}
	var top struct{ Manifests []descriptor }
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("index.json names %d images, want the one multi-arch image", len(top.Manifests))
	}
	b, err = blob(top.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	var list struct{ Manifests []descriptor }
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range list.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("manifest %s names no platform", m.Digest)
		}
		b, err := blob(m.Digest)
		if err != nil {
			return nil, err
		}
		var manifest struct{ Config descriptor }
		if err := json.Unmarshal(b, &manifest); err != nil {
			return nil, err
		}
		if _, err := blob(manifest.Config.Digest); err != nil {
			return nil, err
		}
		out[m.Platform.OS+"/"+m.Platform.Architecture] = manifest.Config.Digest
	}
	return out, nil
}
