// Package config is the rvsync exporter's configuration: the YAML file
// format that users and the Helm chart write (LoadFile, strict: unknown keys
// and wrong types are errors naming the field), the command-line flags that
// override it (Parse), defaults, validation with one-line errors, and the
// split of resources across shards (ShardOf). It is public because the file
// format is a contract: the chart's tests and the end-to-end suite load what
// the chart renders exactly as the exporter does.
package config
