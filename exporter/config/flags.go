package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Invocation is what a command line asks for: the configuration, and
// whether to only check it or print the version.
type Invocation struct {
	Config Config
	// Check asks to validate flags and config file, print the effective
	// configuration and exit.
	Check bool
	// Version asks to print the version and exit.
	Version bool
}

// Parse reads the flags, then the --config file, and lets flags that were
// set explicitly override the file; the result has its defaults filled in
// and is validated. On --help it writes the usage to usage and returns
// flag.ErrHelp.
func Parse(args []string, usage io.Writer) (Invocation, error) {
	fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
	// Errors are reported by the caller in one line; usage only on --help.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var badValue error // the first flag value that did not parse, in the flag's words
	var (
		check        = fs.Bool("check", false, "validate the flags and the --config file, print the effective configuration as YAML and exit (exit code 2 on an error)")
		version      = fs.Bool("version", false, "print the version and exit")
		configFile   = fs.String("config", "", "YAML config file with the same settings as the flags plus per-resource options (flags that are set override it)")
		kubeconfig   = fs.String("kubeconfig", "", "kubeconfig for the informers (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
		probeKube    = fs.String("probe-kubeconfig", "", "kubeconfig for the head probe and the canary (default: the same as --kubeconfig); they always use connections of their own")
		listen       = fs.String("listen-address", DefaultListenAddress, "address serving /metrics, /healthz and /readyz")
		resources    = fs.String("resources", strings.Join(DefaultResources, ","), "comma-separated resources to watch, as plural.group (core: plural), e.g. pods,deployments.apps")
		interval     = durationFlag(fs, &badValue, "probe-interval", DefaultProbeInterval, "period of the head-RV probe of each RV space, a `duration` such as 5s (jittered by 10%)")
		logLevel     = fs.String("log-level", "info", "log level: debug, info, warn or error")
		logFormat    = fs.String("log-format", LogFormatText, "log format: text (key=value) or json (one object a line)")
		maxResources = intFlag(fs, &badValue, "max-resources", DefaultMaxResources, "refuse to watch more resources than this `number` (bounds label cardinality)")
		freshness    = boolFlag(fs, &badValue, "freshness-reads", true, "before each expected watch bookmark of a quiet resource, read it consistently (List limit=1 on the informer's connection) so the bookmark proves freshness whatever etcd's progress-notify interval: about one request per quiet resource per minute")
		canary       = boolFlag(fs, &badValue, "canary", true, "write a heartbeat object every --canary-interval and time its delivery by the exporter's own informer")
		canaryEvery  = durationFlag(fs, &badValue, "canary-interval", DefaultCanaryInterval, "period of canary writes, a `duration` such as 10s")
		canaryDead   = durationFlag(fs, &badValue, "canary-deadline", DefaultCanaryDeadline, "a canary write not delivered within this `duration` counts as lost")
		canaryNS     = fs.String("canary-namespace", "", "namespace of the canary objects (default: the exporter's own namespace: $POD_NAMESPACE, else the service account's, else default)")
		secure       = boolFlag(fs, &badValue, "secure-metrics", false, "serve /metrics over TLS to scrapers whose token may get the non-resource URL /metrics (TokenReview + SubjectAccessReview; the exporter needs system:auth-delegator)")
		certDir      = fs.String("metrics-cert-dir", "", "directory with tls.crt and tls.key for --secure-metrics (default: a self-signed certificate)")
		shard        = intFlag(fs, &badValue, "shard", 0, "this replica's shard, a `number` in [0, --total-shards): it watches the resources whose name hashes to it")
		totalShards  = intFlag(fs, &badValue, "total-shards", 1, "`number` of shards the resources are split across (one replica each)")
		shardFromPod = boolFlag(fs, &badValue, "shard-from-pod-name", false, "take --shard from the StatefulSet ordinal ending $POD_NAME")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usage, "Usage: exporter [flags]\n\nExports how far informer caches trail the API server, per resource.\n\nFlags:\n")
			fs.SetOutput(usage)
			fs.PrintDefaults()
			return Invocation{}, err
		}
		if badValue != nil {
			return Invocation{}, badValue
		}
		return Invocation{}, fmt.Errorf("%w (see --help)", err)
	}
	if fs.NArg() > 0 {
		return Invocation{}, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	inv := Invocation{Check: *check, Version: *version}
	if inv.Version {
		return inv, nil
	}
	cfg := &inv.Config
	if *configFile != "" {
		var err error
		if *cfg, err = LoadFile(*configFile); err != nil {
			return inv, err
		}
	}
	// Without a file every flag applies (with its default); with one, only
	// the flags given on the command line override it.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := func(name string, apply func()) {
		if *configFile == "" || set[name] {
			apply()
		}
	}
	override("kubeconfig", func() { cfg.Kubeconfig = *kubeconfig })
	override("probe-kubeconfig", func() { cfg.ProbeKubeconfig = *probeKube })
	override("listen-address", func() { cfg.ListenAddress = *listen })
	override("resources", func() { cfg.Resources = ParseResourceList(*resources) })
	override("probe-interval", func() { cfg.ProbeInterval.Duration = *interval })
	override("log-level", func() { cfg.LogLevel = *logLevel })
	override("log-format", func() { cfg.LogFormat = *logFormat })
	override("max-resources", func() { cfg.MaxResources = *maxResources })
	override("freshness-reads", func() { cfg.FreshnessReads = freshness })
	override("canary", func() { cfg.Canary.Enabled = canary })
	override("canary-interval", func() { cfg.Canary.Interval.Duration = *canaryEvery })
	override("canary-deadline", func() { cfg.Canary.Deadline.Duration = *canaryDead })
	override("canary-namespace", func() { cfg.Canary.Namespace = *canaryNS })
	override("secure-metrics", func() { cfg.SecureMetrics = *secure })
	override("metrics-cert-dir", func() { cfg.MetricsCertDir = *certDir })
	override("shard", func() { cfg.Shard = *shard })
	override("total-shards", func() { cfg.TotalShards = *totalShards })
	override("shard-from-pod-name", func() { cfg.ShardFromPodName = *shardFromPod })
	cfg.Defaults()
	if err := cfg.ResolveShard(); err != nil {
		return inv, err
	}
	return inv, cfg.Validate()
}

// typedFlag is a flag whose value that does not parse is reported as the
// flag's name, the form it wants and what it got
// (`--probe-interval: want a duration like 5s, got "5"`), instead of the
// flag package's "parse error".
type typedFlag[T any] struct {
	v      *T
	parse  func(string) (T, error)
	want   string
	isBool bool
	name   string
	bad    *error
}

func (f *typedFlag[T]) String() string {
	if f.v == nil { // the zero flag PrintDefaults compares with
		var zero T
		return fmt.Sprint(zero)
	}
	return fmt.Sprint(*f.v)
}

func (f *typedFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		if *f.bad == nil {
			*f.bad = fmt.Errorf("--%s: want %s, got %q", f.name, f.want, s)
		}
		return errors.New("want " + f.want)
	}
	*f.v = v
	return nil
}

// IsBoolFlag lets a boolean flag stand alone (--canary means --canary=true).
func (f *typedFlag[T]) IsBoolFlag() bool { return f.isBool }

func newTypedFlag[T any](fs *flag.FlagSet, bad *error, name string, def T, usage, want string, parse func(string) (T, error)) *T {
	v := new(T)
	*v = def
	_, isBool := any(def).(bool)
	fs.Var(&typedFlag[T]{v: v, parse: parse, want: want, isBool: isBool, name: name, bad: bad}, name, usage)
	return v
}

func durationFlag(fs *flag.FlagSet, bad *error, name string, def time.Duration, usage string) *time.Duration {
	return newTypedFlag(fs, bad, name, def, usage, "a duration like 5s", time.ParseDuration)
}

func intFlag(fs *flag.FlagSet, bad *error, name string, def int, usage string) *int {
	return newTypedFlag(fs, bad, name, def, usage, "a whole number like 3", strconv.Atoi)
}

func boolFlag(fs *flag.FlagSet, bad *error, name string, def bool, usage string) *bool {
	return newTypedFlag(fs, bad, name, def, usage, "true or false", strconv.ParseBool)
}
