//go:build integration

package exporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// The control plane is shared by the tests of this package that can share
// it; it starts on first use and stops after the last test.
var (
	sharedOnce sync.Once
	shared     *testenv.Env
	sharedErr  error
)

func sharedEnv(t *testing.T) *testenv.Env {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = testenv.Start(testenv.Options{}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop control plane:", err)
		}
	}
	os.Exit(code)
}

// running is an exporter started for a test.
type running struct {
	*exporter
	url string
	// stop stops it (the test's cleanup does, if the test did not).
	stop func()
}

// metrics scrapes the exporter.
func (r *running) metrics(t *testing.T) testenv.Metrics {
	t.Helper()
	m, err := testenv.Scrape(r.url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return m
}

// startExporter runs an exporter until the test ends; probe may be nil.
func startExporter(t *testing.T, cfg config.Config, informer, probe *rest.Config) *running {
	t.Helper()
	cfg.ListenAddress = "127.0.0.1:0"
	if cfg.ProbeInterval.Duration == 0 {
		cfg.ProbeInterval.Duration = time.Second
	}
	e, err := newExporter(options{Config: cfg, InformerConfig: informer, ProbeConfig: probe, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("newExporter: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &running{exporter: e, url: "http://" + e.addr() + "/metrics", stop: stop}
}

func resources(names ...string) []config.ResourceConfig {
	var out []config.ResourceConfig
	for _, n := range names {
		out = append(out, config.ResourceConfig{Name: n})
	}
	return out
}

func res(name string) map[string]string { return map[string]string{"resource": name} }

// waitMetric waits until cond holds on a scrape.
func (r *running) waitMetric(t *testing.T, timeout time.Duration, msg string, cond func(testenv.Metrics) bool) testenv.Metrics {
	t.Helper()
	var last testenv.Metrics
	testenv.WaitFor(t, timeout, msg, func() (bool, error) {
		m, err := testenv.Scrape(r.url)
		if err != nil {
			return false, err
		}
		last = m
		return cond(m), nil
	})
	return last
}

func (r *running) waitSynced(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		r.waitMetric(t, 2*time.Minute, n+" synced", func(m testenv.Metrics) bool {
			v, _ := m.Value(catalog.InformerSynced.Name, res(n))
			return v == 1
		})
	}
}

func formatRV(v float64) string { return strconv.FormatUint(uint64(v), 10) }

// testLogger logs to t at the verbosity RVSYNC_TEST_V sets (0 by default;
// 2 traces every head sample and canary write with its verdict).
func testLogger(t *testing.T) logr.Logger {
	v, _ := strconv.Atoi(os.Getenv("RVSYNC_TEST_V"))
	return testr.NewWithOptions(t, testr.Options{Verbosity: v})
}
