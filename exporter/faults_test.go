//go:build integration

package exporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// A user that may list configmaps but not secrets: secrets report not synced
// and a forbidden probe error, configmaps sync, the exporter keeps running.
func TestForbiddenResource(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "rvsync-limited"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "namespaces"}, Verbs: []string{"list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "rvsync-limited"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "rvsync-limited"}},
	}
	for _, create := range []func() error{
		func() error {
			_, err := env.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	user, err := env.Environment.AddUser(envtest.User{Name: "rvsync-limited"}, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// secrets first and no canary: the head probe's reference is secrets,
	// and it must fall back to a resource it may list (a canary's resource
	// would anchor the space instead: proof.Space.Anchor)
	off := false
	r := startExporter(t, config.Config{Resources: resources("secrets", "configmaps", "namespaces"), Canary: config.CanaryConfig{Enabled: &off}}, user.Config(), user.Config())
	r.waitSynced(t, "configmaps", "namespaces")
	m := r.waitMetric(t, time.Minute, "a forbidden sync error for secrets", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.ListErrors.Name, map[string]string{"resource": "secrets", "reason": catalog.ReasonForbidden})
		return v > 0
	})
	if v, _ := m.Value(catalog.InformerSynced.Name, res("secrets")); v != 0 {
		t.Errorf("secrets synced = %v for a user that may not list them", v)
	}
	m = r.waitMetric(t, time.Minute, "lag known for configmaps via the fallback head source", func(m testenv.Metrics) bool {
		_, ok := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		return ok
	})
	if v, _ := m.Value(catalog.HeadProbeErrors.Name, map[string]string{"resource": "secrets", "reason": catalog.ReasonForbidden}); v == 0 {
		t.Error("the head probe never reported that secrets are forbidden")
	}
}

// Compacting etcd past the informer's RV and breaking its watch makes the
// watch resume fail with 410 Gone: the exporter counts an expired relist and
// the informer recovers. The watch cache is off so that compaction alone
// expires the RV (the cache would otherwise serve it from its history), and
// so is the canary: nothing writes configmaps, so the informer's RV stays
// while writes to secrets move etcd's revision past it. (It used to stall
// the informers' connection instead, while the canary wrote; when waiting
// for the compaction outlasted HTTP/2's health check (about 45 s), client-go
// closed the stalled connection and sent a new watch call into the stall,
// and the reset failed that call: a relist for a connection error, never
// for the 410, on a loaded CI machine.)
func TestCompactionExpiresWatch(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{APIServerArgs: map[string]string{
		"watch-cache":              "false",
		"etcd-compaction-interval": "2s",
	}})
	ctx := context.Background()
	if err := testenv.EnsureNamespace(ctx, env.Client, "compact"); err != nil {
		t.Fatal(err)
	}
	proxy, proxied := env.Proxy(t, env.Config)
	off := false
	r := startExporter(t, config.Config{Resources: resources("configmaps"), Canary: config.CanaryConfig{Enabled: &off}}, proxied, env.Config)
	r.waitSynced(t, "configmaps")
	m := r.waitMetric(t, time.Minute, "informer RV", func(m testenv.Metrics) bool {
		_, ok := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
		return ok
	})
	informerRV, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))

	for i := range 10 {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i), Namespace: "compact"}}
		if _, err := env.Client.CoreV1().Secrets("compact").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the API server's compactor has passed the revision the
	// informer's watch resumes from: a watch from RV reads etcd from RV+1,
	// so an exact read at RV+1 must answer 410. (An exact read at RV
	// answers 410 one revision sooner: when the compactor had compacted to
	// exactly RV+1, the first write after the informer's list, the resumed
	// watch started cleanly and heard nothing; 1 run in 3-6 under load.)
	testenv.WaitFor(t, 2*time.Minute, "etcd compacted past the informer's RV+1", func() (bool, error) {
		_, err := env.Client.CoreV1().ConfigMaps("compact").List(ctx, metav1.ListOptions{
			ResourceVersion: formatRV(informerRV + 1), ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), err
	})
	if rv, _ := r.metrics(t).Value(catalog.InformerResourceVersion.Name, res("configmaps")); rv != informerRV {
		t.Fatalf("the informer moved from RV %v to %v: nothing may write configmaps here", informerRV, rv)
	}
	proxy.Reset()
	testenv.WaitFor(t, 2*time.Minute, "an expired relist", func() (bool, error) {
		m, err := testenv.Scrape(r.url)
		if err != nil {
			return false, err
		}
		if v, _ := m.Value(catalog.Relists.Name, map[string]string{"resource": "configmaps", "reason": catalog.RelistExpired}); v >= 1 {
			return true, nil
		}
		// what the exporter saw instead, for the timeout's message
		var seen []string
		for _, reason := range []string{catalog.RelistInitial, catalog.RelistError} {
			v, _ := m.Value(catalog.Relists.Name, map[string]string{"resource": "configmaps", "reason": reason})
			seen = append(seen, fmt.Sprintf("relists{%s}=%v", reason, v))
		}
		for _, reason := range []string{catalog.ReasonExpired, catalog.ReasonUnavailable, catalog.ReasonTimeout, catalog.ReasonOther} {
			v, _ := m.Value(catalog.WatchErrors.Name, map[string]string{"resource": "configmaps", "reason": reason})
			seen = append(seen, fmt.Sprintf("watch_errors{%s}=%v", reason, v))
		}
		rv, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
		return false, fmt.Errorf("none yet: %s, informer RV %v (was %v)", strings.Join(seen, " "), rv, informerRV)
	})
	r.waitMetric(t, 2*time.Minute, "the informer caught up after the relist", func(m testenv.Metrics) bool {
		lag, ok := m.Value(catalog.ResourceVersionLag.Name, res("configmaps"))
		rv, _ := m.Value(catalog.InformerResourceVersion.Name, res("configmaps"))
		return ok && lag < 5 && rv > informerRV
	})
}
