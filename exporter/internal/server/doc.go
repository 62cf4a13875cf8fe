// Package server is the exporter's HTTP server: /metrics (optionally over
// TLS, allowed per scrape by a TokenReview and a SubjectAccessReview),
// /healthz and /readyz.
package server
