package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/exporterproc"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
)

// Env is a running control plane (controlplane.Env) with the test helpers
// that take a testing.TB.
type Env struct {
	*controlplane.Env
}

// discardControllerRuntimeLog sets controller-runtime's logger once:
// envtest logs through it, and unset it prints a stack trace into the
// test's output saying it was never set.
var discardControllerRuntimeLog sync.Once

// Start starts a control plane that outlives any one test (a package's
// shared one); stop it with Stop. Tests that own theirs use StartT.
func Start(opts Options) (*Env, error) {
	discardControllerRuntimeLog.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	e, err := controlplane.Start(opts)
	if err != nil {
		return nil, err
	}
	return &Env{e}, nil
}

// StartT starts a control plane for a test and stops it when the test ends.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	RequireIntegration(t, "kube-apiserver and etcd")
	e, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stop control plane: %v", err)
		}
	})
	return e
}

// Proxy starts a fault proxy in front of cfg's API server for the test and
// returns it with a copy of cfg that connects through it (see
// controlplane.Proxy); it closes when the test ends.
func (e *Env) Proxy(t testing.TB, cfg *rest.Config) (*faultproxy.Proxy, *rest.Config) {
	t.Helper()
	p, proxied, err := controlplane.Proxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, proxied
}

// StartExporterT starts an exporter for a test and stops it when the test
// ends, failing the test if it did not stop cleanly.
func StartExporterT(t testing.TB, o ExporterOptions) *Exporter {
	t.Helper()
	RequireIntegration(t, "the exporter binary and an API server")
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	e, err := exporterproc.StartExporter(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(30 * time.Second); err != nil {
			t.Errorf("stop exporter: %v", err)
		}
	})
	return e
}

// WaitFor polls cond every 100ms until it returns true or the deadline
// passes; on timeout it fails the test with msg and cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, msg string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, msg, last)
		case <-tick.C:
		}
	}
}

// RequireIntegration fails a test that needs real components (kube-apiserver,
// etcd, the exporter binary, helm, Prometheus, promtool) when the package
// was built without the integration build tag: such a test belongs in a file
// that begins with //go:build integration, which `make test` builds (go test
// -tags integration) and `make test-unit` does not, so that the fast tier
// runs without the built tools and a test in the wrong tier is loud instead of
// silently skipped. StartT, StartExporterT and Command call it.
func RequireIntegration(t testing.TB, needs string) {
	t.Helper()
	if !integration {
		t.Fatalf("needs %s: put //go:build integration at the top of the test's file (make test runs it; make test-unit and go test without -tags integration do not build it)", needs)
	}
}

// Command returns the path of a command a test runs from a Debian package
// (promtool from prometheus, amtool from prometheus-alertmanager): an
// integration test, as every real component, and a failure, not a skip,
// when it is missing (`make deps` installs the packages).
func Command(t testing.TB, name, debianPackage string) string {
	t.Helper()
	RequireIntegration(t, name)
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install the Debian package %s (make deps)", name, debianPackage)
	}
	return p
}

// RepoFile returns the content of a file of the repository (path elements
// from its root), failing the test when it cannot be read.
func RepoFile(t testing.TB, elem ...string) []byte {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(append([]string{root}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
