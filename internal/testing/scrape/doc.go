// Package scrape reads Prometheus metrics the way a test or a command
// judges them: one scrape of a /metrics endpoint (or an in-process
// registry) parsed into families, with lookups of a series by its labels,
// sums, and histogram quantiles as PromQL computes them.
package scrape
