//go:build integration

package chart_test

import (
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
)

// TestKubeVersionFollowsTheMatrix: the chart installs on every Kubernetes
// version the version matrix proves (`make test-compat`: kube-apiserver
// 1.34 to 1.37, pre-releases of them included) and refuses the versions
// before it, with helm's message naming the constraint.
func TestKubeVersionFollowsTheMatrix(t *testing.T) {
	for _, v := range []string{"v1.34.0-rc.1", "v1.34.0", "v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2", "v1.38.0-beta.0"} {
		if _, err := chart.TemplateArgs(chart.Options{}, "--kube-version", v); err != nil {
			t.Errorf("Kubernetes %s: %v", v, err)
		}
	}
	for _, v := range []string{"v1.33.13", "v1.30.0"} {
		_, err := chart.TemplateArgs(chart.Options{}, "--kube-version", v)
		if err == nil || !strings.Contains(err.Error(), "kubeVersion") {
			t.Errorf("Kubernetes %s: want a refusal naming kubeVersion, got %v", v, err)
		}
	}
}
