// Package prometheus pins the Prometheus that the real cluster's tests run
// (`make testbin`): Debian's package is built without Kubernetes service
// discovery, which a scrape configured as the chart's ServiceMonitor needs.
package prometheus
