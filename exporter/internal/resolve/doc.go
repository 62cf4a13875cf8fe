// Package resolve maps the exporter's configured `plural.group` names to the
// resources the API server serves, through discovery.
package resolve
