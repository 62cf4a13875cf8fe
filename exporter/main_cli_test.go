package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// Bad flags and config exit 2 with one line naming the problem.
func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("resources: [pods]\nprobeInterval: never\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyKubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(emptyKubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, ""},
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined: -nope"},
		{"bad duration", []string{"--probe-interval", "fast"}, 2, `--probe-interval: want a duration like 5s, got "fast"`},
		{"duration without a unit", []string{"--probe-interval=5"}, 2, `exporter: --probe-interval: want a duration like 5s, got "5"`},
		{"bad boolean", []string{"--canary=maybe"}, 2, `exporter: --canary: want true or false, got "maybe"`},
		{"bad number", []string{"--total-shards", "two"}, 2, `exporter: --total-shards: want a whole number like 3, got "two"`},
		{"positional argument", []string{"pods"}, 2, `unexpected argument "pods"`},
		{"empty resources", []string{"--resources", ""}, 2, "empty resource name"},
		{"duplicate resources", []string{"--resources", "pods,pods"}, 2, `"pods" listed twice`},
		{"missing config file", []string{"--config", filepath.Join(dir, "nope.yaml")}, 2, "config file"},
		{"bad config file", []string{"--config", badConfig}, 2, `invalid duration "never"`},
		{"bad log level", []string{"--log-level", "chatty"}, 2, `logLevel "chatty"`},
		{"bad log format", []string{"--log-format", "xml"}, 2, `logFormat "xml": must be text or json`},
		{"canary deadline too short", []string{"--canary-interval", "10s", "--canary-deadline", "5s"}, 2, "canary.deadline 5s: must be longer than canary.interval 10s"},
		{"kubeconfig without cluster", []string{"--kubeconfig", emptyKubeconfig}, 2, "--kubeconfig"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(c.args, &stdout, &stderr, BuildInfo{})
			if code != c.code {
				t.Fatalf("exit %d; want %d (stderr: %s)", code, c.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.want)
			}
			if c.code == 2 && strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
				t.Errorf("want one line, got:\n%s", stderr.String())
			}
		})
	}
}

func TestFlagsOverrideConfigFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("probeInterval: 7s\nlogLevel: warn\nresources: [pods, configmaps]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := config.Parse([]string{"--config", p, "--log-level", "debug"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := inv.Config
	if cfg.LogLevel != "debug" || cfg.ProbeInterval.String() != "7s" || len(cfg.Resources) != 2 {
		t.Errorf("got %+v; want file values with log level from the flag", cfg)
	}
}

// --help, --version and --check answer on stdout and exit 0 without a
// cluster; --check prints the effective configuration.
func TestHelpVersionAndCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage: exporter", "-probe-kubeconfig", "-check", "-version"}},
		{[]string{"--version"}, []string{"rvsync exporter v9.9.9 (revision abc"}},
		{[]string{"--check", "--resources", "pods,deployments.apps"}, []string{"- name: pods", "- name: deployments.apps", "probeInterval: 5s", "- name: configmaps"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(c.args, &stdout, &stderr, BuildInfo{Version: "v9.9.9", Revision: "abc"}); code != 0 {
			t.Fatalf("%v: exit %d (stderr %s)", c.args, code, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args, w, stdout.String())
			}
		}
	}
}

// TestUnreachableAPIServer: with nothing listening at the API server's
// address, the exporter logs at error level what it waits for and where,
// and when stopped before the server ever answered says so in one line
// (not "timed out waiting for the condition").
func TestUnreachableAPIServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "https://" + ln.Addr().String()
	ln.Close() // the address refuses connections from now on
	var logs lockedBuffer
	e, err := newExporter(options{
		Config:         config.Config{ListenAddress: "127.0.0.1:0"},
		InformerConfig: &rest.Config{Host: host},
		Logger:         newLogger(&logs, "info", config.LogFormatJSON),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := e.resolve(ctx); done <- err }()
	testenv.WaitFor(t, time.Minute, "the failure logged", func() (bool, error) {
		return strings.Contains(logs.String(), "cannot reach the API server"), nil
	})
	cancel()
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "waiting for the API server at "+host+" to answer discovery") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v: want one line naming the API server %s and what the exporter waited for", err, host)
	}
	var line struct{ Level, Msg, Server, Err string }
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil {
		t.Fatalf("log %q: want JSON lines (--log-format json): %v", logs.String(), err)
	}
	if line.Level != "ERROR" || line.Server != host || !strings.Contains(line.Err, "connection refused") {
		t.Errorf("log line %+v: want level ERROR, server %s and the connection error", line, host)
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
