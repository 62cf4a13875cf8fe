// Package chart renders the rvsync-slo Helm chart with the real helm binary
// and hands its manifests to tests: decoded as unstructured objects, strictly
// decoded into typed ones (including the Prometheus Operator's
// ServiceMonitor and PrometheusRule, whose CRDs a bare API server lacks),
// and applied to a real API server with strict field validation.
//
// The helm binary is $RVSYNC_HELM (set by the Makefile), else the newest
// helm-*/helm of the tool cache (`make testbin` builds it).
package chart
