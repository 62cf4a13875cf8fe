//go:build integration

package exporter

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// With secure metrics, a scraper's token is authenticated and authorized
// against the real API server: allowed → 200, not allowed → 403, none → 401.
func TestSecureMetrics(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := env.Client
	mustCreate := func(err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, sa := range []string{"scraper-allowed", "scraper-denied"} {
		_, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		mustCreate(err)
	}
	_, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "rvsync-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "rvsync-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "rvsync-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper-allowed", Namespace: "default"}},
	}, metav1.CreateOptions{})
	mustCreate(err)
	token := func(sa string) string {
		t.Helper()
		tr, err := c.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	cfg := config.Config{Resources: resources("configmaps"), SecureMetrics: true}
	cfg.Canary.Enabled = new(false)
	r := startExporter(t, cfg, env.Config, nil)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(bearer string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+r.addr()+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	allowed, denied := token("scraper-allowed"), token("scraper-denied")
	testenv.WaitFor(t, time.Minute, "an authorized scrape", func() (bool, error) { return get(allowed) == http.StatusOK, nil })
	if code := get(denied); code != http.StatusForbidden {
		t.Errorf("token without get /metrics: status %d; want 403", code)
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: status %d; want 401", code)
	}
	if code := get("not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("bogus token: status %d; want 401", code)
	}
}
