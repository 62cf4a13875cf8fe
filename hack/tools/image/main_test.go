package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestLabels: every -label lands in the image config as given, and a
// label without a value's '=' or given twice is a flag error.
func TestLabels(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "exporter")
	if err := os.WriteFile(bin, []byte("\x7fELF stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	s, err := parseFlags([]string{"-binary", bin, "-name", "example.test/rvsync-slo:1.2.3", "-out", out,
		"-label", "org.opencontainers.image.licenses=Apache-2.0", "-label", "org.opencontainers.image.version=1.2.3"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := write(s); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"org.opencontainers.image.licenses": "Apache-2.0", "org.opencontainers.image.version": "1.2.3"}
	if len(cf.Config.Labels) != len(want) {
		t.Errorf("labels %v, want %v", cf.Config.Labels, want)
	}
	for k, v := range want {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}
	for _, bad := range [][]string{{"-label", "novalue"}, {"-label", "a=1", "-label", "a=2"}} {
		args := append([]string{"-binary", bin, "-name", "example.test/r:1", "-out", out}, bad...)
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-label") {
			t.Errorf("%v: want an error naming -label, got %v", bad, err)
		}
	}
}
