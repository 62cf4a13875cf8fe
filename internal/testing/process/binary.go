package process

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// EnvTools names the tool cache directory; the Makefile sets it (its TOOLS).
const EnvTools = "RVSYNC_TOOLS"

// Binary returns the path in environment variable env, or else the newest
// match of pattern (e.g. "helm-*/helm") in the tool cache that `make
// testbin` builds into (ToolDir).
func Binary(env, pattern string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, p, err)
		}
		return p, nil
	}
	dir, err := ToolDir()
	if err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(matches) == 0 {
		return "", fmt.Errorf("no %s in %s: run `make testbin` to build the control plane (or set %s)", pattern, dir, env)
	}
	slices.Sort(matches)
	return matches[len(matches)-1], nil
}

// ToolDir returns the tool cache: $RVSYNC_TOOLS (the Makefile's TOOLS), else
// rvsync-slo in the user's cache directory (~/.cache/rvsync-slo), where the
// Makefile builds by default.
func ToolDir() (string, error) {
	if d := os.Getenv(EnvTools); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no tool cache: %w (set %s)", err, EnvTools)
	}
	return filepath.Join(cache, "rvsync-slo"), nil
}

// RepoRoot returns the directory holding the module's go.mod, searching
// upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isMainModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of the rvsync-slo module above the working directory")
		}
		dir = parent
	}
}

func isMainModule(gomod []byte) bool {
	const want = "module github.com/rvsync-slo/rvsync-slo\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}
