//go:build integration

package chart_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
)

const readerNamespace = "monitoring"

// secureValues turn secure metrics on with one reader, kube-prometheus-stack's
// Prometheus by default.
func secureValues(reader string, extra map[string]any) map[string]any {
	metrics := map[string]any{"secure": true, "readers": []any{map[string]any{"name": reader, "namespace": readerNamespace}}}
	for k, v := range extra {
		metrics[k] = v
	}
	return map[string]any{"metrics": metrics}
}

// TestSecureMetrics: secure metrics reach the config, the exporter's
// ClusterRole (token and access reviews), a metrics-reader ClusterRole bound
// to the readers, HTTPS probes and an https ServiceMonitor. The shared
// checks of TestLintAndTemplate hold the ClusterRole, probes and
// ServiceMonitor to the config.
func TestSecureMetrics(t *testing.T) {
	tests := []struct {
		name        string
		extra       map[string]any
		wantCertDir bool
	}{
		{"self-signed", nil, false},
		{"certificate Secret", map[string]any{"certSecret": "metrics-tls"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := render(t, chart.Options{Values: secureValues("kube-prometheus-stack-prometheus", tt.extra)})
			cfg, raw := exporterConfig(t, m)
			if !cfg.SecureMetrics || (cfg.MetricsCertDir != "") != tt.wantCertDir {
				t.Fatalf("config: want secureMetrics, metricsCertDir set %v, got\n%s", tt.wantCertDir, raw)
			}
			checkClusterRole(t, m, cfg)
			checkPod(t, m, cfg)
			checkServiceMonitor(t, m, cfg)
			name := fullname(t, m) + "-metrics-reader"
			var role rbacv1.ClusterRole
			var binding rbacv1.ClusterRoleBinding
			for kind, obj := range map[string]any{"ClusterRole": &role, "ClusterRoleBinding": &binding} {
				u, err := m.Named(kind, name)
				if err != nil {
					t.Fatal(err)
				}
				if err := chart.Into(u, obj); err != nil {
					t.Fatal(err)
				}
			}
			if want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}; !equality.Semantic.DeepEqual(role.Rules, want) {
				t.Errorf("metrics-reader rules %+v, want %+v", role.Rules, want)
			}
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-prometheus-stack-prometheus", Namespace: readerNamespace}}
			if binding.RoleRef.Name != name || !equality.Semantic.DeepEqual(binding.Subjects, want) {
				t.Errorf("metrics-reader binding %+v → %+v, want %s → %+v", binding.Subjects, binding.RoleRef, name, want)
			}
		})
	}
	t.Run("certSecret needs secure", func(t *testing.T) {
		_, err := chart.Template(chart.Options{Values: map[string]any{"metrics": map[string]any{"certSecret": "metrics-tls"}}})
		if err == nil || !strings.Contains(err.Error(), "metrics.secure") {
			t.Fatalf("want a failure naming metrics.secure, got %v", err)
		}
	})
}
