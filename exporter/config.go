package exporter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultResources are watched when no resources are configured: core and
// apps resources whose freshness most controllers depend on. Secrets are
// left out on purpose: listing even their metadata needs `list secrets`,
// which RBAC cannot tell apart from reading their data.
var DefaultResources = []string{
	"namespaces", "nodes", "pods", "services", "configmaps", "serviceaccounts",
	"persistentvolumeclaims", "endpointslices.discovery.k8s.io", "leases.coordination.k8s.io",
	"deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps", "jobs.batch",
}

// Defaults of the settings that have one.
const (
	DefaultListenAddress = ":8080"
	DefaultProbeInterval = 5 * time.Second
	DefaultMaxResources  = 200
)

// Duration is a time.Duration that reads and writes as a Go duration
// string ("5s") in YAML and JSON.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"5s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. \"5s\", \"1m\")", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// ResourceConfig configures one watched resource. In YAML it is either a
// bare name ("deployments.apps") or an object with options.
type ResourceConfig struct {
	// Name is `plural.group`, or `plural` for the core group.
	Name string `json:"name"`
	// Space is the resource's RV space: resources stored in one etcd share
	// one head probe. Empty: the cluster's main etcd. Set it for a resource
	// on its own etcd (--etcd-servers-overrides) or an extension API server.
	Space string `json:"space,omitempty"`
}

// UnmarshalJSON accepts a bare name or an object.
func (r *ResourceConfig) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*r = ResourceConfig{Name: name}
		return nil
	}
	type plain ResourceConfig
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*r = ResourceConfig(p)
	return nil
}

// Config is the exporter's whole configuration: the YAML file's schema,
// overridden by flags that were set.
type Config struct {
	// Kubeconfig for the informers; empty: in-cluster, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// ProbeKubeconfig for the head probe; empty: the same as Kubeconfig. The
	// probe always gets its own connection either way.
	ProbeKubeconfig string `json:"probeKubeconfig,omitempty"`
	// ListenAddress serves /metrics, /healthz and /readyz.
	ListenAddress string `json:"listenAddress,omitempty"`
	// ProbeInterval is the head probe period per RV space.
	ProbeInterval Duration `json:"probeInterval,omitzero"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty"`
	// Resources to watch.
	Resources []ResourceConfig `json:"resources,omitempty"`
	// MaxResources refuses configurations watching more resources (label
	// cardinality guard).
	MaxResources int `json:"maxResources,omitempty"`
}

// Defaults fills every unset field.
func (c *Config) Defaults() {
	if c.ListenAddress == "" {
		c.ListenAddress = DefaultListenAddress
	}
	if c.ProbeInterval.Duration == 0 {
		c.ProbeInterval.Duration = DefaultProbeInterval
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.MaxResources == 0 {
		c.MaxResources = DefaultMaxResources
	}
	if len(c.Resources) == 0 {
		for _, n := range DefaultResources {
			c.Resources = append(c.Resources, ResourceConfig{Name: n})
		}
	}
}

// Validate checks a defaulted config and names the first offending field.
func (c *Config) Validate() error {
	var errs []error
	if c.ProbeInterval.Duration < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("probeInterval %v: must be at least 100ms", c.ProbeInterval.Duration))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("logLevel %q: must be one of debug, info, warn, error", c.LogLevel))
	}
	if c.MaxResources < 1 {
		errs = append(errs, fmt.Errorf("maxResources %d: must be positive", c.MaxResources))
	}
	if len(c.Resources) > c.MaxResources {
		errs = append(errs, fmt.Errorf("resources: %d configured, more than maxResources=%d (raise maxResources if the label cardinality is intended)", len(c.Resources), c.MaxResources))
	}
	seen := map[string]bool{}
	for i, r := range c.Resources {
		if err := validResourceName(r.Name); err != nil {
			errs = append(errs, fmt.Errorf("resources[%d]: %w", i, err))
			continue
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("resources[%d]: %q listed twice", i, r.Name))
		}
		seen[r.Name] = true
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func validResourceName(n string) error {
	switch {
	case n == "":
		return errors.New("empty resource name (want plural.group, e.g. deployments.apps, or plural for core, e.g. pods)")
	case strings.ContainsAny(n, "*/ :,") || n != strings.ToLower(n):
		return fmt.Errorf("resource %q: want a lower-case plural.group name such as deployments.apps (no wildcards, versions or kinds)", n)
	}
	return nil
}

// LoadFile reads a YAML config file strictly: unknown keys and wrong types
// are errors that name the field.
func LoadFile(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config file: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// ParseResourceList parses the --resources flag: a comma-separated list.
func ParseResourceList(s string) []ResourceConfig {
	var out []ResourceConfig
	for _, n := range strings.Split(s, ",") {
		out = append(out, ResourceConfig{Name: strings.TrimSpace(n)})
	}
	return out
}
