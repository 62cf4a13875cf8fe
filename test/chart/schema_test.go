//go:build integration

package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// TestSchemaRejects: a wrong value fails `helm template` with a message
// that names the key and what is wrong.
func TestSchemaRejects(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   []string // all in the error
	}{
		{"string threshold", map[string]any{"slo": map[string]any{"cacheStaleness": map[string]any{"thresholdSeconds": "30s"}}},
			[]string{"/slo/cacheStaleness/thresholdSeconds", "got string, want number"}},
		{"unknown top-level key", map[string]any{"serviceMonitr": map[string]any{"enabled": true}},
			[]string{"additional properties 'serviceMonitr' not allowed"}},
		{"unknown nested key", map[string]any{"slo": map[string]any{"listLatency": map[string]any{"threshold": 1.5}}},
			[]string{"/slo/listLatency", "additional properties 'threshold' not allowed"}},
		{"event-ratio threshold that is no bucket", map[string]any{"slo": map[string]any{"listLatency": map[string]any{"thresholdSeconds": 2}}},
			[]string{"/slo/listLatency/thresholdSeconds", "value must be one of"}},
		{"objective out of range", map[string]any{"slo": map[string]any{"rvLag": map[string]any{"objective": 99}}},
			[]string{"/slo/rvLag/objective", "exclusiveMaximum: got 99, want 1"}},
		{"wildcard resource", map[string]any{"watchedResources": []any{"pods", "*"}},
			[]string{"/watchedResources/1"}},
		{"resource with a version", map[string]any{"watchedResources": []any{"apps/v1/deployments"}},
			[]string{"/watchedResources/0"}},
		{"bad cluster label", map[string]any{"cluster": map[string]any{"label": "k8s-cluster"}},
			[]string{"/cluster/label", "does not match pattern"}},
		{"bad duration", map[string]any{"canary": map[string]any{"interval": "10 seconds"}},
			[]string{"/canary/interval", "does not match pattern"}},
		{"reserved alert label", map[string]any{"slo": map[string]any{"extraLabels": map[string]any{"severity": "low"}}},
			[]string{`slo.extraLabels: "severity" is set by the rules`}},
		{"bad alert label name", map[string]any{"slo": map[string]any{"extraLabels": map[string]any{"team-name": "x"}}},
			[]string{"invalid propertyName 'team-name'"}},
		{"sharding.enabled not a boolean", map[string]any{"sharding": map[string]any{"enabled": "yes"}},
			[]string{"/sharding/enabled", "got string, want boolean"}},
		{"sharding.shards not an integer", map[string]any{"sharding": map[string]any{"shards": "3"}},
			[]string{"/sharding/shards", "got string, want integer"}},
		{"no shards", map[string]any{"sharding": map[string]any{"shards": 0}},
			[]string{"/sharding/shards", "minimum: got 0, want 1"}},
		{"unknown sharding key", map[string]any{"sharding": map[string]any{"replicas": 3}},
			[]string{"/sharding", "additional properties 'replicas' not allowed"}},
		{"metrics.secure not a boolean", map[string]any{"metrics": map[string]any{"secure": "true"}},
			[]string{"/metrics/secure", "got string, want boolean"}},
		{"metrics.certSecret not a string", map[string]any{"metrics": map[string]any{"certSecret": 1}},
			[]string{"/metrics/certSecret", "got number, want string"}},
		{"metrics.readers not a list", map[string]any{"metrics": map[string]any{"readers": "prometheus"}},
			[]string{"/metrics/readers", "got string, want array"}},
		{"reader without namespace", map[string]any{"metrics": map[string]any{"readers": []any{map[string]any{"name": "prometheus"}}}},
			[]string{"/metrics/readers/0", "missing property 'namespace'"}},
		{"reader with an unknown key", map[string]any{"metrics": map[string]any{"readers": []any{map[string]any{"name": "p", "namespace": "m", "kind": "User"}}}},
			[]string{"/metrics/readers/0", "additional properties 'kind' not allowed"}},
		{"serviceMonitor.tlsConfig not an object", map[string]any{"serviceMonitor": map[string]any{"tlsConfig": "insecure"}},
			[]string{"/serviceMonitor/tlsConfig", "got string, want object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chart.Template(chart.Options{Values: tt.values})
			if err == nil {
				t.Fatal("helm template accepted the values")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	t.Run("secrets need rbac.allowSecrets", func(t *testing.T) {
		_, err := chart.Template(chart.Options{Values: map[string]any{"watchedResources": []any{"secrets"}}})
		if err == nil || !strings.Contains(err.Error(), "rbac.allowSecrets") {
			t.Fatalf("want a failure naming rbac.allowSecrets, got %v", err)
		}
		if _, err := chart.Template(chart.Options{Values: map[string]any{"watchedResources": []any{"secrets"}, "rbac": map[string]any{"allowSecrets": true}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSchemaBucketsAreCatalogBuckets: the event-ratio thresholds the schema
// allows are exactly the bucket bounds of the histograms the rules count.
func TestSchemaBucketsAreCatalogBuckets(t *testing.T) {
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			SLO struct {
				Properties map[string]struct {
					Properties struct {
						ThresholdSeconds struct {
							AnyOf []struct {
								Enum []any `json:"enum"`
							} `json:"anyOf"`
						} `json:"thresholdSeconds"`
					} `json:"properties"`
				} `json:"properties"`
			} `json:"slo"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for key, m := range map[string]catalog.Metric{"listLatency": catalog.ListDuration, "canaryDelivery": catalog.CanaryDeliveryLatency} {
		// a number, or the same as a string (helm --set keeps decimals strings)
		var nums, strs []any
		for _, b := range m.Buckets {
			nums, strs = append(nums, b), append(strs, strconv.FormatFloat(b, 'g', -1, 64))
		}
		anyOf := schema.Properties.SLO.Properties[key].Properties.ThresholdSeconds.AnyOf
		if len(anyOf) != 2 || !reflect.DeepEqual(anyOf[0].Enum, nums) || !reflect.DeepEqual(anyOf[1].Enum, strs) {
			t.Errorf("slo.%s.thresholdSeconds %+v, want the buckets of %s %v as numbers or strings", key, anyOf, m.Name, m.Buckets)
		}
	}
}

// TestDefaultConfigIsExporterDefault: with default values the exporter
// config equals the exporter's own defaults, and its listen port is the
// container's and Service's metrics port.
func TestDefaultConfigIsExporterDefault(t *testing.T) {
	m := render(t, chart.Options{})
	cfg, _ := exporterConfig(t, m)
	def := config.Config{}
	def.Defaults()
	cfg.Defaults()
	var names []string
	for _, r := range cfg.Resources {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, config.DefaultResources) {
		t.Errorf("resources %v, want config.DefaultResources %v", names, config.DefaultResources)
	}
	cfg.Resources, def.Resources = nil, nil
	if cfg.ListenAddress != def.ListenAddress || cfg.ProbeInterval != def.ProbeInterval || cfg.LogLevel != def.LogLevel || cfg.MaxResources != def.MaxResources {
		t.Errorf("config %+v, want the exporter defaults %+v", cfg, def)
	}
}
