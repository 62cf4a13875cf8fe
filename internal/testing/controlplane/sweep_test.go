//go:build integration

package controlplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// A kube-apiserver that missed its start timeout got one SIGTERM from
// envtest, which then forgot it and tried again, five times; one slow to
// end (under load) outlived its control plane, and the gate's demo test
// found it running a minute after the demo had exited. And the timeout
// was not ours: envtest gives etcd and kube-apiserver its own
// ControlPlaneStartTimeout (20 s by default) over theirs, so an API server
// that needed longer on a loaded machine failed every start. Here the API
// server never answers and ignores SIGTERM: each start must wait the
// timeout Start sets, and a failed start leave none of its processes
// behind, the etcd of EtcdOverrides included.
func TestAFailedStartWaitsItsTimeoutAndLeavesNothingRunning(t *testing.T) {
	_, etcd, err := Binaries()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fake, starts := filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "starts")
	// one line per start: when it began, and when SIGTERM came
	script := `#!/bin/sh
[ "$1" = --help ] && exit 0
began=$(date +%s.%N)
trap 'echo "$began $(date +%s.%N)" >> ` + starts + `' TERM
while :; do sleep 1; done
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// every directory of the start, so every process of it names this one
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(EnvKubeAPIServer, fake)
	t.Setenv(EnvEtcd, etcd)
	defer func(d time.Duration) { startTimeout = d }(startTimeout)
	startTimeout = 3 * time.Second
	defer func() { // whatever the outcome, nothing of this test stays
		for _, s := range []string{fake, tmp} {
			left, _ := process.Naming(s)
			for _, p := range left {
				_ = p.Kill()
			}
		}
	}()

	e, err := start(Options{EtcdOverrides: []string{"/events"}})
	if err == nil {
		_ = e.Stop()
		t.Fatal("a control plane started with a kube-apiserver that never answers")
	}
	t.Log(err)
	left, err := process.Naming(fake)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		t.Errorf("a kube-apiserver of the failed start is still running: %s", p)
	}
	if left, err = process.Naming(tmp); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		t.Errorf("a process of the failed start is still running: %s", p)
	}

	raw, err := os.ReadFile(starts)
	if err != nil {
		t.Fatalf("no start of the fake kube-apiserver got SIGTERM: %v", err)
	}
	lines := strings.Fields(strings.TrimSpace(string(raw)))
	if len(lines) == 0 {
		t.Fatal("no start of the fake kube-apiserver got SIGTERM")
	}
	for i := 0; i+1 < len(lines); i += 2 {
		began, err1 := strconv.ParseFloat(lines[i], 64)
		termed, err2 := strconv.ParseFloat(lines[i+1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("starts file: %q", raw)
		}
		// the shell starts a moment after envtest's clock does; 10 s is
		// the slack of a loaded machine, well short of envtest's 20 s
		if waited := time.Duration((termed - began) * float64(time.Second)); waited > startTimeout+10*time.Second {
			t.Errorf("start %d: SIGTERM %v after the start, want the start timeout %v", i/2+1, waited.Round(time.Millisecond), startTimeout)
		}
	}
}
