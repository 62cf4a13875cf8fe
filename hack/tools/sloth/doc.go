// Package sloth pins sloth (github.com/slok/sloth), the SLO rule generator
// that `make bench-prometheus` (cmd/rvsync-bench-prometheus) evaluates side
// by side with the project's shipped rules: the same three SLOs on the same
// series in the same Prometheus, so their rule evaluation times compare.
// Sloth's module needs no replace directives.
package sloth
