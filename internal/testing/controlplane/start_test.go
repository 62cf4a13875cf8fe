//go:build integration

package controlplane_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
)

// A kube-apiserver that cannot bind its port (another process took it, as
// on a busy machine between envtest's choice of a free port and the bind)
// fails every start envtest retries on that port. Start tries control
// planes of their own, and its error says why the last failed, in
// kube-apiserver's own words: the gate once saw only "retried 5 times".
func TestAControlPlaneThatCannotStartSaysWhy(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	env, err := controlplane.Start(controlplane.Options{APIServerArgs: map[string]string{"secure-port": port, "bind-address": "127.0.0.1"}})
	if err == nil {
		_ = env.Stop()
		t.Fatalf("a control plane started on port %s, which another listener holds", port)
	}
	msg := err.Error()
	t.Log(msg)
	if !strings.Contains(msg, "3 control planes failed to start") {
		t.Errorf("error does not say how many control planes were tried: %s", msg)
	}
	if !strings.Contains(msg, "address already in use") {
		t.Errorf("error does not carry kube-apiserver's reason (address already in use): %s", msg)
	}
}
