//go:build integration

package cluster_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/cluster"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// TestClusterPodRuns starts a cluster, runs a pod of the pause image (non-root, no
// capabilities, read-only root) on the pod network, and stops the cluster:
// Stop fails if anything of the cluster stays on the host. The soak runs
// it: the cluster is one per machine, and the gate's TestCluster proves the
// same (the chart's pod runs, and its Stop leaves the host as it was).
func TestClusterPodRuns(t *testing.T) {
	testenv.RequireSoak(t, "test/e2e's TestCluster, in the same cluster (a pod runs; Stop leaves nothing)")
	ctx := testenv.UntilDeadline(t) // the machine-wide cluster lock: another gate may hold it long
	c, err := cluster.Start(ctx, cluster.Options{Logf: t.Logf, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	yes, no, uid := true, false, int64(65532)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: cluster.PauseImage, ImagePullPolicy: corev1.PullNever,
			SecurityContext: &corev1.SecurityContext{
				RunAsUser: &uid, RunAsNonRoot: &yes, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}}},
	}
	created := time.Now()
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 3*time.Minute, "the pod Ready", func() (bool, error) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "pause", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				t.Logf("pod Ready after %v at %s", time.Since(created).Round(100*time.Millisecond), p.Status.PodIP)
				return true, nil
			}
		}
		return false, nil
	})
}
