//go:build integration

package conformance

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

var update = flag.Bool("update", false, "TestConformance: rewrite testdata/*.real with what the real control plane showed")

// realTarget is a real kube-apiserver and etcd, as make test runs them,
// reached through a fault proxy.
type realTarget struct {
	env       *testenv.Env
	procs     *testenv.Processes
	proxy     *faultproxy.Proxy
	proxied   *rest.Config
	dir       string
	snapshots int
	snapshot  string
}

func (r *realTarget) Config() *rest.Config { return r.proxied }

func (r *realTarget) Freeze(_ context.Context, frozen bool) error {
	if frozen {
		r.proxy.Stall()
	} else {
		r.proxy.Release()
	}
	return nil
}

func (r *realTarget) Namespace(ctx context.Context, name string) error {
	return testenv.EnsureNamespace(ctx, r.env.Client, name)
}

func (r *realTarget) Restart(ctx context.Context) error { return r.procs.RestartAPIServer(ctx) }

func (r *realTarget) Snapshot(context.Context) error {
	r.snapshots++
	r.snapshot = filepath.Join(r.dir, "etcd-"+strconv.Itoa(r.snapshots))
	return r.procs.SnapshotEtcd(r.snapshot, false)
}

func (r *realTarget) Restore(ctx context.Context, restart bool) error {
	if restart {
		return r.procs.RestoreEtcd(ctx, r.snapshot)
	}
	return r.procs.RestoreEtcdUnderAPIServer(ctx, r.snapshot)
}

// TestConformance runs every script against a real kube-apiserver and
// etcd and against the model, and fails where what the client observed
// differs beyond the tolerances. With -update it rewrites the recordings
// of the real control plane that TestModelMatchesRecording compares the
// model with.
func TestConformance(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	procs, err := env.Processes(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Stop() })
	proxy, proxied := env.Proxy(t, env.Config)
	target := &realTarget{env: env, procs: procs, proxy: proxy, proxied: proxied, dir: t.TempDir()}
	for i, script := range Scripts {
		t.Run(script.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			real, err := Run(ctx, target, script, namespace(i))
			if err != nil {
				t.Fatalf("real: %v", err)
			}
			logRecord(t, "real", real)
			if *update {
				if err := os.WriteFile(recording(script.Name), real.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			compare(t, runModel(t, script, namespace(i)), real)
		})
	}
}
