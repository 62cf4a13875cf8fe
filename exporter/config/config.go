package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
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
	DefaultListenAddress  = ":8080"
	DefaultProbeInterval  = 5 * time.Second
	DefaultMaxResources   = 200
	DefaultCanaryInterval = 10 * time.Second
	DefaultCanaryDeadline = 60 * time.Second
)

// Log formats.
const (
	LogFormatText = "text" // slog's key=value lines
	LogFormatJSON = "json" // one JSON object a line
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
	// Convergence tracks metadata.generation against the observed
	// generation. Default: on for DefaultConvergenceResources, off otherwise.
	Convergence *bool `json:"convergence,omitempty"`
	// ObservedGenerationPath is where the observed generation lives;
	// default status.observedGeneration.
	ObservedGenerationPath string `json:"observedGenerationPath,omitempty"`
}

// TracksConvergence reports whether the resource tracks generation convergence.
func (r ResourceConfig) TracksConvergence() bool {
	if r.Convergence != nil {
		return *r.Convergence
	}
	return slices.Contains(DefaultConvergenceResources, r.Name)
}

// DefaultObservedGenerationPath is where workload controllers report the
// generation they acted on.
const DefaultObservedGenerationPath = "status.observedGeneration"

// DefaultConvergenceResources track generation convergence unless told not to.
var DefaultConvergenceResources = []string{"deployments.apps", "statefulsets.apps", "daemonsets.apps"}

// CanaryConfig configures the canary writer.
type CanaryConfig struct {
	// Enabled turns the canary on (default true). It needs create, get,
	// update/patch and delete on the canary objects in Namespace.
	Enabled *bool `json:"enabled,omitempty"`
	// Interval between heartbeat writes (default 10s).
	Interval Duration `json:"interval,omitzero"`
	// Deadline after which an undelivered write counts as lost (default 60s).
	Deadline Duration `json:"deadline,omitzero"`
	// Namespace of the canary objects; default the exporter's own namespace
	// ($POD_NAMESPACE, else the service account's, else "default").
	Namespace string `json:"namespace,omitempty"`
	// Name of the canary objects; default rvsync-canary-<pod name>, unique
	// per replica so replicas never fight over one object.
	Name string `json:"name,omitempty"`
	// Resources are the canary object resources: configmaps (default),
	// leases.coordination.k8s.io, or a namespaced custom resource. Each is
	// also watched like any other resource.
	Resources []string `json:"resources,omitempty"`
}

// On reports whether the canary runs.
func (c CanaryConfig) On() bool { return c.Enabled == nil || *c.Enabled }

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
	// LogFormat is text (key=value) or json (one object a line).
	LogFormat string `json:"logFormat,omitempty"`
	// Resources to watch.
	Resources []ResourceConfig `json:"resources,omitempty"`
	// MaxResources refuses configurations watching more resources (label
	// cardinality guard).
	MaxResources int `json:"maxResources,omitempty"`
	// Canary configures the heartbeat writer.
	Canary CanaryConfig `json:"canary,omitzero"`
	// Shard and TotalShards split the resources across replicas by a hash
	// of their names: this replica watches those with ShardOf == Shard.
	// TotalShards 0 or 1: no sharding.
	Shard       int `json:"shard,omitempty"`
	TotalShards int `json:"totalShards,omitempty"`
	// FreshnessReads makes quiet resources' watch bookmarks prove
	// freshness with one consistent read per resource per bookmark period
	// (default true); see probe.Options.NoFreshnessReads.
	FreshnessReads *bool `json:"freshnessReads,omitempty"`
	// SecureMetrics serves /metrics over TLS and allows only scrapers whose
	// bearer token may `get` the non-resource URL /metrics (TokenReview +
	// SubjectAccessReview); the exporter then needs the rights of the
	// system:auth-delegator ClusterRole.
	SecureMetrics bool `json:"secureMetrics,omitempty"`
	// MetricsCertDir holds tls.crt and tls.key for secure serving; empty:
	// a self-signed certificate made at start.
	MetricsCertDir string `json:"metricsCertDir,omitempty"`
	// ShardFromPodName takes Shard from the StatefulSet ordinal at the end
	// of $POD_NAME (the chart's StatefulSet mode).
	ShardFromPodName bool `json:"shardFromPodName,omitempty"`
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
	c.LogFormat = cmp.Or(c.LogFormat, LogFormatText)
	if c.MaxResources == 0 {
		c.MaxResources = DefaultMaxResources
	}
	if len(c.Resources) == 0 {
		for _, n := range DefaultResources {
			c.Resources = append(c.Resources, ResourceConfig{Name: n})
		}
	}
	if c.TotalShards == 0 {
		c.TotalShards = 1
	}
	c.Canary.defaults()
	if c.Canary.On() {
		// Canary objects are watched through the same instrumented path.
		for _, n := range c.Canary.Resources {
			if !slices.ContainsFunc(c.Resources, func(r ResourceConfig) bool { return r.Name == n }) {
				c.Resources = append(c.Resources, ResourceConfig{Name: n})
			}
		}
	}
}

// ResolveShard sets Shard from $POD_NAME's ordinal when ShardFromPodName.
func (c *Config) ResolveShard() error {
	if !c.ShardFromPodName {
		return nil
	}
	n, err := ordinal(os.Getenv("POD_NAME"))
	if err != nil {
		return fmt.Errorf("shardFromPodName: %w", err)
	}
	c.Shard = n
	return nil
}

func (c *CanaryConfig) defaults() {
	if c.Interval.Duration == 0 {
		c.Interval.Duration = DefaultCanaryInterval
	}
	if c.Deadline.Duration == 0 {
		c.Deadline.Duration = DefaultCanaryDeadline
	}
	if len(c.Resources) == 0 {
		c.Resources = []string{"configmaps"}
	}
	if c.Namespace == "" {
		c.Namespace = ownNamespace()
	}
	if c.Name == "" {
		c.Name = "rvsync-canary-" + podName()
	}
}

// ownNamespace is the exporter's namespace: $POD_NAMESPACE (the chart sets
// it from the downward API), else the service account's, else "default".
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// podName is $POD_NAME, else the host name, as a DNS label.
func podName() string {
	n := os.Getenv("POD_NAME")
	if n == "" {
		n, _ = os.Hostname()
	}
	n = strings.ToLower(n)
	n = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		return '-'
	}, n)
	n = strings.Trim(n, "-")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		n = "exporter"
	}
	return n
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
	if c.LogFormat != LogFormatText && c.LogFormat != LogFormatJSON {
		errs = append(errs, fmt.Errorf("logFormat %q: must be %s or %s", c.LogFormat, LogFormatText, LogFormatJSON))
	}
	if c.MaxResources < 1 {
		errs = append(errs, fmt.Errorf("maxResources %d: must be positive", c.MaxResources))
	}
	if len(c.Resources) > c.MaxResources {
		errs = append(errs, fmt.Errorf("resources: %d configured, more than maxResources=%d (raise maxResources if the label cardinality is intended)", len(c.Resources), c.MaxResources))
	}
	if c.Canary.On() {
		if c.Canary.Interval.Duration < 100*time.Millisecond {
			errs = append(errs, fmt.Errorf("canary.interval %v: must be at least 100ms", c.Canary.Interval.Duration))
		}
		if c.Canary.Deadline.Duration <= c.Canary.Interval.Duration {
			errs = append(errs, fmt.Errorf("canary.deadline %v: must be longer than canary.interval %v", c.Canary.Deadline.Duration, c.Canary.Interval.Duration))
		}
		for i, n := range c.Canary.Resources {
			if err := validResourceName(n); err != nil {
				errs = append(errs, fmt.Errorf("canary.resources[%d]: %w", i, err))
			}
		}
		if bad := validation.IsDNS1123Subdomain(c.Canary.Name); len(bad) > 0 {
			errs = append(errs, fmt.Errorf("canary.name %q: %s", c.Canary.Name, bad[0]))
		}
	}
	if c.TotalShards < 1 {
		errs = append(errs, fmt.Errorf("totalShards %d: must be at least 1", c.TotalShards))
	} else if c.Shard < 0 || c.Shard >= c.TotalShards {
		errs = append(errs, fmt.Errorf("shard %d: must be in [0, totalShards=%d)", c.Shard, c.TotalShards))
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
		if r.ObservedGenerationPath != "" && (strings.HasPrefix(r.ObservedGenerationPath, ".") || strings.HasSuffix(r.ObservedGenerationPath, ".") || strings.Contains(r.ObservedGenerationPath, "..")) {
			errs = append(errs, fmt.Errorf("resources[%d].observedGenerationPath %q: want dot-separated fields, e.g. status.observedGeneration", i, r.ObservedGenerationPath))
		}
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
	if err := decodeYAML(b, &c); err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
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
