// Package workload writes objects to an API server at a known rate: the
// churn of ConfigMaps and Deployments that tests, the demo and the
// benchmark measure the exporter under. It survives API-server faults
// (a failed write is retried on the next tick) and counts what landed.
package workload
