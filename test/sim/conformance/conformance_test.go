package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// modelTarget is the simulation's model control plane, served in memory.
type modelTarget struct {
	c        *model.Cluster
	snapshot uint64
}

func (m *modelTarget) Config() *rest.Config {
	return &rest.Config{Host: "https://" + host, Transport: m.c.Transport()}
}

func (m *modelTarget) Namespace(context.Context, string) error { return nil }

func (m *modelTarget) Restart(context.Context) error {
	m.c.Do(func(tx *model.Tx) { tx.Stop(0); tx.Start(0) })
	return nil
}

func (m *modelTarget) Snapshot(context.Context) error {
	m.c.Do(func(tx *model.Tx) { m.snapshot = tx.Revision(model.MainEtcd) })
	return nil
}

func (m *modelTarget) Restore(_ context.Context, restart bool) error {
	m.c.Do(func(tx *model.Tx) {
		tx.Restore(model.MainEtcd, m.snapshot)
		if restart {
			tx.Stop(0)
			tx.Start(0)
		}
	})
	return nil
}

// Freeze freezes the client's host (Config's), as the simulation does.
func (m *modelTarget) Freeze(_ context.Context, frozen bool) error {
	m.c.Do(func(tx *model.Tx) { tx.Freeze(host, frozen, false) })
	return nil
}

// host is the model's client host (Config).
const host = "conformance"

// backgroundEvery is how often the model's etcd takes a write nobody
// watches, as the real API server renews its own lease every 10s.
const backgroundEvery = 10 * time.Second

// runModel runs script against the model, inside a synctest bubble of t,
// as the simulation runs it: etcd at revision 1000 with progress
// notifications every 5s, one API server.
func runModel(t *testing.T, script Script, ns string) *Record {
	t.Helper()
	var rec *Record
	var err error
	synctest.Test(t, func(*testing.T) {
		c := model.New(model.Config{Seed: 1})
		c.AddEtcd(model.EtcdSpec{Name: model.MainEtcd, Revision: 1000, ProgressNotify: 5 * time.Second})
		c.AddResource(model.ResourceSpec{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { drive(ctx, c) })
		rec, err = Run(ctx, &modelTarget{c: c}, script, ns)
		cancel()
		c.Close()
		wg.Wait()
	})
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	return rec
}

// drive runs the model's scheduled work (bookmarks, progress
// notifications, watch timeouts) on time, and its background writes,
// until ctx ends.
func drive(ctx context.Context, c *model.Cluster) {
	background := time.Now().Add(backgroundEvery)
	for {
		next := time.Now().Add(100 * time.Millisecond)
		if background.Before(next) {
			next = background
		}
		if at, ok := c.Next(); ok && at.Before(next) {
			next = at
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		c.Advance()
		if !time.Now().Before(background) {
			c.Do(func(tx *model.Tx) { tx.Others(model.MainEtcd, 1) })
			background = background.Add(backgroundEvery)
		}
	}
}

func recording(name string) string { return filepath.Join("testdata", name+".real") }

// namespace is the namespace the i-th script runs in, on both control
// planes: objects' keys, and so their shard labels, are the same.
func namespace(i int) string { return "conformance-" + strconv.Itoa(i) }

// TestModelMatchesRecording compares the model with the recordings of the
// real control plane (testdata/*.real, written by TestConformance
// -update): the fast tier's check that the model has not drifted.
func TestModelMatchesRecording(t *testing.T) {
	for i, script := range Scripts {
		t.Run(script.Name, func(t *testing.T) {
			data, err := os.ReadFile(recording(script.Name))
			if err != nil {
				t.Fatalf("%v (record it: go test -tags integration -run TestConformance ./test/sim/conformance -update)", err)
			}
			real, err := ParseRecord(script, data)
			if err != nil {
				t.Fatal(err)
			}
			model := runModel(t, script, namespace(i))
			if testing.Verbose() {
				logRecord(t, "model", model)
			}
			compare(t, model, real)
		})
	}
}

func compare(t *testing.T, model, real *Record) {
	t.Helper()
	diffs := Compare(model, real)
	if len(diffs) == 0 {
		return
	}
	logRecord(t, "model", model)
	for _, d := range diffs {
		t.Errorf("stream %q: %v", d.Stream, d)
	}
}

func logRecord(t *testing.T, what string, r *Record) {
	t.Helper()
	for i, s := range r.Script.Steps {
		t.Logf("%s step %2d: %s", what, i, s)
	}
	for _, o := range r.Observations {
		t.Logf("%s %v", what, o)
	}
	if r.Fills > 0 {
		t.Logf("%s: %d fill writes", what, r.Fills)
	}
}
