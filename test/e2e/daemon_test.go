//go:build integration

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// freeAddr returns a loopback address with a port that was free a moment
// ago (testenv.FreeAddr).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// logFile creates dir/name for a process's output.
func logFile(t *testing.T, dir, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// startDaemon runs the installed program name (a Debian package's binary)
// until the test ends, with its output in logDir/name.log, and waits until
// GET readyURL answers 200.
func startDaemon(t *testing.T, name, logDir, readyURL string, args ...string) *testenv.Process {
	t.Helper()
	return startDaemonAt(t, name, installed(t, name), logDir, readyURL, args...)
}

// installed returns the path of the installed program name (a Debian
// package's binary).
func installed(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (`make deps` installs the Debian packages prometheus and prometheus-alertmanager): %v", name, err)
	}
	return path
}

// startDaemonAt runs the program at path as startDaemon does.
func startDaemonAt(t *testing.T, name, path, logDir, readyURL string, args ...string) *testenv.Process {
	t.Helper()
	p := &testenv.Process{Path: path, Args: args, Log: logFile(t, logDir, name+".log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Logf("stop %s: %v", name, err)
		}
	})
	testenv.WaitFor(t, 2*time.Minute, name+" ready", func() (bool, error) {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", name, testenv.Tail(filepath.Join(logDir, name+".log"), 30))
		}
		return httpOK(readyURL)
	})
	return p
}

// httpOK reports whether GET url answers 200.
func httpOK(url string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := testenv.GetOK(ctx, url)
	return err == nil, err
}
