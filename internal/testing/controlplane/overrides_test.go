//go:build integration

package controlplane_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// Events kept in an etcd of their own (--etcd-servers-overrides) take
// their resource versions from its revision, which starts where
// OverrideEtcdRevision put it, far from the main etcd's; Stop ends that
// etcd and removes its data.
func TestEtcdOverrides(t *testing.T) {
	const revision = 5000
	testenv.RequireIntegration(t, "kube-apiserver and etcd")
	began := time.Now()
	env, err := testenv.Start(testenv.Options{EtcdOverrides: []string{"/events"}, OverrideEtcdRevision: revision, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()
	t.Logf("started in %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cm, err := testenv.WriteConfigMaps(ctx, env.Client, metav1.NamespaceDefault, "main", 1)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	mainRV, _ := strconv.Atoi(cm)
	ownRV, _ := strconv.Atoi(ev.ResourceVersion)
	t.Logf("revisions: main etcd %d, events' etcd %d", mainRV, ownRV)
	if ownRV < revision || mainRV >= revision {
		t.Errorf("events at RV %d, configmaps at RV %d: want events at %d or more, configmaps below", ownRV, mainRV, revision)
	}

	data := env.OverrideEtcd.DataDir
	if err := env.Stop(); err != nil {
		t.Error(err)
	}
	stopped = true
	left, err := testenv.Naming(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		t.Errorf("the events' etcd runs after Stop: %s", p)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the events' etcd's data %s is still there after Stop (%v)", data, err)
	}
}
