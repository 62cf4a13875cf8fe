package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// EnvOperatorCRDs names the directory of the Prometheus Operator's CRD
// manifests; the Makefile sets it.
const EnvOperatorCRDs = "RVSYNC_OPERATOR_CRDS"

// operatorCRDs are the Prometheus Operator CRDs the chart's defaults
// create objects of.
var operatorCRDs = []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"}

// RestrictedNamespaceLabels make a namespace enforce the restricted Pod
// Security Standard, as a hardened cluster labels the release namespace.
var RestrictedNamespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// InstallOperatorCRDs applies the ServiceMonitor and PrometheusRule CRDs
// to the cluster of cfg, as a cluster running the Prometheus Operator has
// them (the chart at its defaults creates both kinds), and waits until
// they are served. The manifests are $RVSYNC_OPERATOR_CRDS, else the
// newest prometheus-operator-*/crds of the tool cache, which `make testbin` generates
// from the operator's API types.
func InstallOperatorCRDs(ctx context.Context, cfg *rest.Config) error {
	dir, err := process.Binary(EnvOperatorCRDs, "prometheus-operator-*/crds")
	if err != nil {
		return err
	}
	var objs Manifests
	for _, f := range operatorCRDs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		m, err := Decode(b)
		if err != nil {
			return err
		}
		objs = append(objs, m...)
	}
	a, err := NewApplier(cfg)
	if err != nil {
		return err
	}
	if err := a.Apply(ctx, objs); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return process.Poll(ctx, "the operator's kinds served", func(context.Context) error {
		rl, err := dc.ServerResourcesForGroupVersion(monv1.SchemeGroupVersion.String())
		if err != nil {
			return err
		}
		if len(rl.APIResources) < len(operatorCRDs) {
			return fmt.Errorf("%d of %d kinds served", len(rl.APIResources), len(operatorCRDs))
		}
		return nil
	})
}
