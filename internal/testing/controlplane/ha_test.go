//go:build integration

package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// Three kube-apiservers on a three-member etcd behind the balancer: each
// serves on its own, the balancer spreads new connections over all three,
// and a rolling restart of each keeps the control plane answering.
func TestHAControlPlane(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{APIServers: 3, EtcdMembers: 3, LogDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ha := env.HA
	if len(ha.Servers) != 3 {
		t.Fatalf("%d API servers", len(ha.Servers))
	}
	// each server answers directly and sees what another wrote
	for i := range ha.Servers {
		c := kubernetes.NewForConfigOrDie(ha.Direct(env.Config, i))
		if _, err := testenv.WriteConfigMaps(ctx, c, metav1.NamespaceDefault, fmt.Sprintf("ha-%d", i), 1); err != nil {
			t.Fatalf("write through %s: %v", ha.Servers[i].Name, err)
		}
		next := kubernetes.NewForConfigOrDie(ha.Direct(env.Config, (i+1)%3))
		if _, err := next.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, fmt.Sprintf("ha-%d-0", i), metav1.GetOptions{}); err != nil {
			t.Errorf("%s does not see %s's write: %v", ha.Servers[(i+1)%3].Name, ha.Servers[i].Name, err)
		}
	}
	// new clients, each on a connection of its own (a Dial function of its
	// own keeps client-go from sharing a transport), spread round-robin
	before := routed(ha)
	for range 6 {
		cfg := rest.CopyConfig(env.Config)
		cfg.Dial = (&net.Dialer{}).DialContext
		c := kubernetes.NewForConfigOrDie(cfg)
		if _, err := c.Discovery().ServerVersion(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range routed(ha) {
		if n-before[i] < 1 {
			t.Errorf("%s got %d of 6 new connections", ha.Servers[i].Name, n-before[i])
		}
	}
	for i := range ha.Servers {
		if err := ha.Restart(ctx, i); err != nil {
			t.Fatalf("restart %s: %v", ha.Servers[i].Name, err)
		}
		if _, err := testenv.WriteConfigMaps(ctx, env.Client, metav1.NamespaceDefault, "after-restart", 1); err != nil {
			t.Fatalf("write after restarting %s: %v", ha.Servers[i].Name, err)
		}
	}
}

func routed(ha *testenv.HA) []int {
	var out []int
	for _, s := range ha.Servers {
		out = append(out, s.Backend.Routed())
	}
	return out
}
