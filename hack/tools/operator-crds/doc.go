// Package operatorcrds pins the Prometheus Operator API types and
// controller-gen that generate the ServiceMonitor and PrometheusRule CRDs
// for the test cluster (`make testbin`): the chart at its defaults creates
// both kinds, so a cluster without them refuses `helm install`, and the
// operator's own CRD manifests are not on the Go module proxy, while its
// API types (with their kubebuilder markers, from which upstream generates
// the same manifests) are.
package operatorcrds

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
