//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/cluster"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// clusterAPIServers is how many kube-apiservers the real cluster runs:
// the kubernetes Service has an endpoint for each. Three in the soak, for
// the rolling restart through the Service; one in the gate, whose cluster
// tests run without it (two more API servers for the whole suite are CPU
// the gate's other tests want, and the cluster is one per machine, so a
// second gate beside it waits for all of its time).
func clusterAPIServers() int {
	if testenv.Soak() {
		return 3
	}
	return 1
}

// haRollingRestart: the chart's pod reaches the cluster's kube-apiservers
// through the kubernetes Service, one endpoint per API server, balanced
// per connection by kube-proxy. Each API server restarts in turn, as a
// rolling upgrade does (kube-proxy keeps its endpoint: connections to it
// are refused until it is back, and the clients retry). Ground truth of
// where the pod's connections went is kube-proxy's NAT table (conntrack).
// The pod stays Ready without a container restart, every informer's watch
// moves (watch starts), all stay synced and are proven fresh again after
// the last restart, and no RV regression is counted.
func (s *clusterSuite) haRollingRestart(t *testing.T) {
	testenv.RequireSoak(t, "TestEndToEnd/apiserver_restart_relists_without_regression (a restart, no regression), TestCluster/install (the pod through the kubernetes Service)")
	r := mainRelease
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	eps, err := s.endpointAddresses(ctx, "default", "kubernetes", "https")
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != clusterAPIServers() {
		t.Fatalf("the kubernetes Service's endpoints: %v, want %d", eps, clusterAPIServers())
	}
	p := &s.waitReady(t, r, 1)[0]
	resources := s.configuredResources(t, r)
	before := waitSynced(t, p, resources)
	t.Logf("the pod's connections to the kubernetes Service by API server port: %v", s.serviceConnections(t, p))

	var last time.Time
	for i := range s.c.APIServerPorts {
		restarted := time.Now()
		if err := s.c.RestartAPIServer(ctx, i); err != nil {
			t.Fatalf("restart kube-apiserver %d: %v", i, err)
		}
		last = time.Now()
		t.Logf("kube-apiserver %d (port %d) back after %v", i, s.c.APIServerPorts[i], last.Sub(restarted).Round(time.Second))
	}
	var after testenv.Metrics
	testenv.WaitFor(t, 5*time.Minute, "every resource synced and fresh after the rolling restart", func() (bool, error) {
		m, err := testenv.Scrape(metricsURL(p))
		if err != nil {
			return false, err
		}
		after = m
		for _, res := range resources {
			l := map[string]string{catalog.LabelResource: res}
			if v, _ := m.Value(catalog.InformerSynced.Name, l); v != 1 {
				return false, fmt.Errorf("%s not synced", res)
			}
			if v, ok := m.Value(catalog.CacheStaleness.Name, l); !ok || v > time.Since(last).Seconds() {
				return false, fmt.Errorf("%s: staleness %v (known %v)", res, v, ok)
			}
		}
		return true, nil
	})
	conns := s.serviceConnections(t, p)
	t.Logf("after the rolling restart, the pod's connections by API server port: %v", conns)
	for port := range conns {
		if !slices.Contains(s.c.APIServerPorts, port) {
			t.Errorf("a connection of the pod to the kubernetes Service went to port %d, no API server's (%v)", port, s.c.APIServerPorts)
		}
	}
	if len(conns) == 0 {
		t.Error("kube-proxy's NAT table holds no connection of the pod to the kubernetes Service")
	}
	starts := after.Sum(catalog.WatchStarts.Name, nil) - before.Sum(catalog.WatchStarts.Name, nil)
	relists := after.Sum(catalog.Relists.Name, nil) - before.Sum(catalog.Relists.Name, nil)
	t.Logf("rolling restart of %d API servers: %v watch starts, %v relists for %d resources", clusterAPIServers(), starts, relists, len(resources))
	if starts < float64(len(resources)) {
		t.Errorf("%v watch starts for %d resources: every informer's watch must have moved", starts, len(resources))
	}
	if n := after.Sum(catalog.ResourceVersionRegressions.Name, nil); n != 0 {
		t.Errorf("%v RV regressions in a rolling restart", n)
	}
	now, err := s.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !podReady(now) || now.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod after the rolling restart: %s, %d container restarts", podState(now), now.Status.ContainerStatuses[0].RestartCount)
	}
}

// serviceConnections counts the pod's established connections to the
// kubernetes Service by the API server port kube-proxy sent each to, as
// conntrack's NAT table records them (the reply tuple's source port).
func (s *clusterSuite) serviceConnections(t *testing.T, p *corev1.Pod) map[int]int {
	t.Helper()
	out, err := exec.Command("conntrack", "-L", "-p", "tcp", "--orig-src", p.Status.PodIP,
		"--orig-dst", cluster.KubernetesServiceIP, "--state", "ESTABLISHED").Output()
	if err != nil {
		t.Fatalf("conntrack -L: %v", err)
	}
	conns := map[int]int{}
	for _, line := range strings.Split(string(out), "\n") {
		var sports []string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "sport="); ok {
				sports = append(sports, v)
			}
		}
		if len(sports) == 2 { // original, then reply: the API server's port
			if port, err := strconv.Atoi(sports[1]); err == nil {
				conns[port]++
			}
		}
	}
	return conns
}
