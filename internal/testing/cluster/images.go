package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// Program is a static Go program of this repository that becomes an image.
type Program struct {
	// Dir is the module directory, relative to the repository root.
	Dir string
	// Package is the main package, relative to Dir.
	Package string
	// LDFlags are extra linker flags (e.g. -X main.version=...).
	LDFlags string
}

// The cluster's programs: the pause program the runtime needs for every
// sandbox, and the exporter.
var (
	PauseProgram    = Program{Dir: "hack/tools/image", Package: "./pause"}
	ExporterProgram = Program{Dir: ".", Package: "./cmd/exporter", LDFlags: "-X main.version=cluster-test -X main.revision=local"}
)

// ExporterImage is the name the tests install the chart with: a name no
// registry serves, so the image can only come from the imported tarball.
const ExporterImage = "rvsync.local/rvsync-slo:dev"

// BuildImage builds p as a static binary and packs it into an image
// tarball named name in outDir, with hack/tools/image: the binary as the
// entrypoint, run as 65532:65532, no shell, as the Dockerfile makes it. It
// returns the tarball's path, ready for `ctr images import`.
func BuildImage(ctx context.Context, outDir string, p Program, name string) (string, error) {
	root, err := process.RepoRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(outDir, path.Base(p.Package))
	if err := goCmd(ctx, filepath.Join(root, p.Dir), "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+p.LDFlags), "-o", bin, p.Package); err != nil {
		return "", err
	}
	tarball := filepath.Join(outDir, path.Base(p.Package)+".tar")
	if err := goCmd(ctx, filepath.Join(root, "hack", "tools", "image"), "run", ".", "-binary", bin, "-name", name, "-out", tarball); err != nil {
		return "", err
	}
	return tarball, nil
}

// goCmd runs the go command in dir with cgo off (static binaries).
func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v: %s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}
