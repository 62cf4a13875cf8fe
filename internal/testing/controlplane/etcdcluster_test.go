//go:build integration

package controlplane_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// A three-member etcd behind kube-apiserver: the leader moves on demand to
// another member, a killed leader is replaced by election, the killed
// member rejoins on restart, and the API server serves writes after each.
func TestEtcdClusterLeaderChanges(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{EtcdMembers: 3, LogDir: t.TempDir()})
	c := env.Etcd
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	write := func(what string) {
		t.Helper()
		if _, err := testenv.WriteConfigMaps(ctx, env.Client, metav1.NamespaceDefault, "leader", 1); err != nil {
			t.Fatalf("write after %s: %v", what, err)
		}
	}
	write("start")
	leader, term, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s leads in term %d", leader.Name, term)

	from, to, moved, err := c.MoveLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if from != leader || to == leader || moved <= term {
		t.Errorf("moved %s → %s in term %d, from %s in term %d", from.Name, to.Name, moved, leader.Name, term)
	}
	write("a move")

	if err := c.KillMember(to); err != nil {
		t.Fatal(err)
	}
	elected, electedTerm, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if elected == to || electedTerm <= moved {
		t.Errorf("after killing leader %s (term %d): %s leads in term %d", to.Name, moved, elected.Name, electedTerm)
	}
	write("a killed leader")

	if err := c.RestartMember(ctx, to); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader == 0 || st.Leader == st.ID {
		t.Errorf("restarted %s follows %x (itself: %x)", to.Name, st.Leader, st.ID)
	}
	write("a restart")
}
