//go:build integration

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// demoRun is a running demo process and the lines it printed.
type demoRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string // stdout, line by line; closed at its end
	tmp   string      // the TMPDIR of the demo and everything it starts

	mu     sync.Mutex
	output []string
	stderr bytes.Buffer
}

// startDemo builds the demo and runs it with args, TMPDIR a directory of
// the test's, so that every process it starts can be found by it.
func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "rvsync-demo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make demo, sharing the exporter's build cache
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := &demoRun{t: t, lines: make(chan string, 1000), tmp: filepath.Join(dir, "tmp")}
	if err := os.Mkdir(r.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(os.Environ(), "TMPDIR="+r.tmp)
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.mu.Lock()
			r.output = append(r.output, sc.Text())
			r.mu.Unlock()
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(r.cleanup)
	return r
}

// next returns the next line matching re within timeout, failing the test
// (with the output so far) when none comes.
func (r *demoRun) next(re *regexp.Regexp, timeout time.Duration, what string) []string {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("the demo ended before %s; stderr: %s\noutput:\n%s", what, r.stderr.String(), r.dump())
			}
			if m := re.FindStringSubmatch(line); m != nil {
				r.t.Logf("%s: %s", what, line)
				return m
			}
		case <-deadline:
			r.t.Fatalf("no %s within %v; output:\n%s", what, timeout, r.dump())
		}
	}
}

func (r *demoRun) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.output[max(0, len(r.output)-150):], "\n")
}

// stop interrupts the demo (Ctrl-C) and waits for its exit code.
func (r *demoRun) stop(timeout time.Duration) error {
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		for range r.lines { // drain, so the demo never blocks on its output
		}
		done <- r.cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("the demo did not exit within %v of SIGINT", timeout)
	}
}

// cleanup ends a demo the test left running and fails the test if any
// process the demo started outlived it (each is found by the TMPDIR in its
// command line, and killed by its pid).
func (r *demoRun) cleanup() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			_ = r.cmd.Process.Kill()
		}
	}
	// a child the demo stopped may still be ending: envtest kills one that
	// outlasts its stop timeout and returns, and on a loaded machine the
	// kill takes a moment (CI's gate once found kube-apiserver alive just
	// after the demo exited); one alive a minute later outlived the demo
	left, _ := testenv.Naming(r.tmp)
	for deadline := time.Now().Add(time.Minute); len(left) > 0 && time.Now().Before(deadline); left, _ = testenv.Naming(r.tmp) {
		time.Sleep(200 * time.Millisecond) // polling /proc
	}
	for _, p := range left {
		r.t.Errorf("process %s outlived the demo by a minute", p)
		_ = p.Kill()
	}
}

// row is a resource's row of a table the demo printed.
type row struct{ lag, staleness, silence, alerts string }

// parseRow reads a table row (see printTable) of resource res.
func parseRow(line, res string) (row, bool) {
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != res {
		return row{}, false
	}
	return row{lag: f[2], staleness: f[3], silence: f[4], alerts: strings.Join(f[8:], " ")}, true
}

func seconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v
}

var (
	firstTable    = regexp.MustCompile(`first table, (\S+) after the start`)
	synced        = regexp.MustCompile(`every informer synced`)
	stalled       = regexp.MustCompile(`fault: stall`)
	paged         = regexp.MustCompile(`PAGE firing: (.*RvsyncWatchStalled/\S+.*) — (\S+) after the stall began`)
	released      = regexp.MustCompile(`fault ended: stall, after (\S+)`)
	resolved      = regexp.MustCompile(`PAGE resolved: (.*RvsyncWatchStalled/\S+.*) — (\S+) after the stall ended`)
	tableHead     = regexp.MustCompile(`^--- `)
	configmapsRow = regexp.MustCompile(`^\s*configmaps\s.*`) // right-aligned; the whole row
	summary       = regexp.MustCompile(`pages: (\d+) alerts fired, (\d+) resolved`)
)

// startScripted runs the demo as `make demo` does with one scripted fault,
// on free ports, and waits until every informer synced and the fault began;
// it returns the demo and when the fault began.
func startScripted(t *testing.T, fault string) (*demoRun, time.Time) {
	t.Helper()
	for _, c := range []string{prometheusCommand, alertmanagerCommand} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s not found: install the Debian packages prometheus and prometheus-alertmanager (make deps)", c)
		}
	}
	r := startDemo(t, "--duration=25m", "--every=10s", "--fault="+fault,
		"--listen-address=127.0.0.1:0", "--prometheus-address=127.0.0.1:0", "--alertmanager-address=127.0.0.1:0",
		"--log-dir="+t.TempDir())
	r.next(firstTable, 6*time.Minute, "the first table")
	r.next(synced, 3*time.Minute, "every informer synced")
	r.next(stalled, time.Minute, "the stall")
	return r, time.Now()
}

// recovered reads tables until the configmaps row is silent no more.
func (r *demoRun) recovered() {
	r.t.Helper()
	r.next(tableHead, time.Minute, "a table after the stall")
	for {
		line := r.next(configmapsRow, 30*time.Second, "the configmaps row")[0]
		rw, _ := parseRow(line, "configmaps")
		if s := seconds(rw.silence); s >= 0 && s < 30 {
			return
		}
		r.next(tableHead, time.Minute, "a table after the stall")
	}
}

// TestScriptedShortStall is the gate's form of TestScriptedStall: the demo
// as `make demo` runs it, scripted, its informers' connection stalled for
// 45s. The table must show the stall as it happens (silence and the
// staleness of configmaps growing with it: at least 30s of each by the
// release, the stall's own length being the truth), recover after the
// release, and the demo stop cleanly on Ctrl-C, leaving no process behind.
// That a stall pages through the demo's Prometheus and Alertmanager takes
// over five minutes of real windows: the soak runs it (TestScriptedStall),
// and the gate proves the same chain with scaled windows (test/e2e's
// TestEndToEnd).
func TestScriptedShortStall(t *testing.T) {
	t.Parallel()
	const stall = 45 * time.Second
	r, stallAt := startScripted(t, "stall@15s+"+stall.String())
	var maxSilence, maxStaleness float64
stall:
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the demo ended during the stall; stderr: %s\noutput:\n%s", r.stderr.String(), r.dump())
			}
			if rw, ok := parseRow(line, "configmaps"); ok {
				maxSilence = max(maxSilence, seconds(rw.silence))
				maxStaleness = max(maxStaleness, seconds(rw.staleness))
			}
			if released.MatchString(line) {
				t.Logf("released %v after the stall began: %s", time.Since(stallAt).Round(time.Second), line)
				break stall
			}
		case <-time.After(time.Until(stallAt.Add(stall + 2*time.Minute))):
			t.Fatalf("the stall of %v did not end within 2 minutes of its length; output:\n%s", stall, r.dump())
		}
	}
	// the table every 10s: by the release it showed the stall for at
	// least 30 of its 45s
	if maxSilence < 30 {
		t.Errorf("the table's silence of configmaps reached %vs during a stall of %v", maxSilence, stall)
	}
	if maxStaleness < 30 {
		t.Errorf("the table's staleness of configmaps reached %vs during a stall of %v", maxStaleness, stall)
	}
	r.recovered()
	if err := r.stop(3 * time.Minute); err != nil {
		t.Errorf("stop: %v; stderr: %s", err, r.stderr.String())
	}
}

// TestScriptedStall runs the demo as `make demo` does, scripted: once every
// informer has synced the informers' connection stalls until a page
// arrives. The demo's own output must show the stall in the table
// (silence, staleness and the stall alert's state moving), the
// RvsyncWatchStalled page reaching its receiver no sooner than the alert's
// `for` and the routing's group wait allow, the page resolving after the
// release, the table recovering, and a clean stop on Ctrl-C that leaves no
// process behind. A soak (make test-soak): the gate runs
// TestScriptedShortStall.
func TestScriptedStall(t *testing.T) {
	testenv.RequireSoak(t, "TestScriptedShortStall, and test/e2e's TestEndToEnd for the page")
	t.Parallel()
	r, stallAt := startScripted(t, "stall@15s+page")

	// During the stall: read tables until the page arrives.
	var maxSilence, maxStaleness float64
	var firing bool
	var page []string
	for page == nil {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the demo ended during the stall; stderr: %s\noutput:\n%s", r.stderr.String(), r.dump())
			}
			for _, res := range demoResources {
				if rw, ok := parseRow(line, res); ok {
					maxSilence = max(maxSilence, seconds(rw.silence))
					if res == "configmaps" {
						maxStaleness = max(maxStaleness, seconds(rw.staleness))
					}
					firing = firing || strings.Contains(rw.alerts, "WatchStalled firing")
				}
			}
			page = paged.FindStringSubmatch(line)
			if page != nil {
				t.Logf("paged: %s", line)
			}
		case <-time.After(time.Until(stallAt.Add(12 * time.Minute))):
			t.Fatalf("no RvsyncWatchStalled page within 12 minutes of the stall; output:\n%s", r.dump())
		}
	}
	took, err := time.ParseDuration(page[2])
	if err != nil {
		t.Fatalf("page time %q: %v", page[2], err)
	}
	// The alert holds for 2m before it fires and the routing waits 30s for
	// the rest of the group: a page sooner is timed from the wrong instant.
	if floor := 2*time.Minute + 30*time.Second; took < floor {
		t.Errorf("the page came %v after the stall, sooner than its `for` and group wait allow (%v)", took, floor)
	}
	if elapsed := time.Since(stallAt); took > elapsed+5*time.Second {
		t.Errorf("the demo says the page took %v; the test saw %v since the stall", took, elapsed.Round(time.Second))
	}
	if maxSilence < 180 {
		t.Errorf("the table's silence reached %vs during the stall; the stall alert needs more than 180s", maxSilence)
	}
	if maxStaleness < 60 {
		t.Errorf("the table's staleness of configmaps reached %vs during a stall of %v", maxStaleness, took)
	}
	if !firing {
		t.Error("no table showed RvsyncWatchStalled firing before its page arrived")
	}

	r.next(released, time.Minute, "the release on the page")
	res := r.next(resolved, 5*time.Minute, "the page resolved")
	t.Logf("resolved %s after the release: %s", res[2], res[1])
	// The table recovers: a later table's configmaps row is silent no more.
	r.recovered()

	if err := r.stop(3 * time.Minute); err != nil {
		t.Errorf("stop: %v; stderr: %s", err, r.stderr.String())
	}
	out := strings.Join(r.output, "\n")
	if m := summary.FindStringSubmatch(out); m == nil || m[1] == "0" || m[2] == "0" {
		t.Errorf("no summary of fired and resolved pages at the stop:\n%s", r.dump())
	}
}

// TestRulesAreTheCharts: the rules the demo's Prometheus loads are the
// chart's: its rules ConfigMap, rendered by helm at the default values but
// monitoring=plain (a Prometheus without the Prometheus Operator), as
// release rvsync-slo in the demo's namespace.
func TestRulesAreTheCharts(t *testing.T) {
	m, err := chart.Template(chart.Options{Release: chart.Name, Namespace: workloadNamespace, WithoutOperator: true, Values: map[string]any{"monitoring": "plain"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.RuleFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("want one rules ConfigMap, have %d rule files", len(files))
	}
	ours, err := demoRules()
	if err != nil {
		t.Fatal(err)
	}
	want, err := chart.NormalRules(ours)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		got, err := chart.NormalRules(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("the chart's %s differs from the demo's rules", name)
		}
	}
}
