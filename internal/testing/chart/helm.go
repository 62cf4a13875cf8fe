package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// EnvHelm names the helm binary; the Makefile sets it.
const EnvHelm = "RVSYNC_HELM"

// Name is the chart's directory under charts/.
const Name = "rvsync-slo"

// Helm returns the path of the helm binary.
func Helm() (string, error) { return process.Binary(EnvHelm, "helm-*/helm") }

// Dir returns the chart's directory.
func Dir() (string, error) {
	root, err := process.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", Name), nil
}

// Version returns the chart's version (Chart.yaml), which its image tag
// (appVersion), release tag (v<version>) and runbook links follow.
func Version() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := utilyaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("the chart's Chart.yaml: %w", err)
	}
	if c.Version == "" || c.Version != c.AppVersion {
		return "", fmt.Errorf("the chart's version %q and appVersion %q must be set and equal: one release tag publishes the image and the chart", c.Version, c.AppVersion)
	}
	return c.Version, nil
}

// Scenarios returns the chart's ci/*-values.yaml files.
func Scenarios() ([]string, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return filepath.Glob(filepath.Join(dir, "ci", "*-values.yaml"))
}

// KubeVersion is the Kubernetes version `helm template` and `helm lint`
// render for (helm's own default, v1.20, is below the chart's kubeVersion):
// the test control plane's minor.
const KubeVersion = "v1.37.0"

// OperatorAPIs are the Prometheus Operator kinds a cluster with the
// operator's CRDs serves, as `helm template --api-versions` takes them.
var OperatorAPIs = []string{
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
	"monitoring.coreos.com/v1alpha1/AlertmanagerConfig",
}

// Options say how to render the chart.
type Options struct {
	Release   string // default "rvsync-slo"
	Namespace string // default "default"
	// ValuesFiles are passed with -f, in order.
	ValuesFiles []string
	// Values are passed last, as a values file of their own.
	Values map[string]any
	// Kubeconfig is the cluster that install, upgrade and uninstall act
	// on; empty for template and lint, which then reach no cluster.
	Kubeconfig string
	// Chart is the chart to render or install: a directory or a packaged
	// .tgz (a release's); default the repository's charts/rvsync-slo.
	Chart string
	// WithoutOperator renders `helm template` for a cluster without the
	// Prometheus Operator's CRDs. Otherwise template assumes the cluster
	// serves OperatorAPIs, as the tests' clusters do (install and upgrade
	// ask the cluster itself).
	WithoutOperator bool
}

// args returns the helm flags of o; a Values file is written to dir.
func (o Options) args(dir string) ([]string, error) {
	args := []string{"--namespace", cmpOr(o.Namespace, "default")}
	for _, f := range o.ValuesFiles {
		args = append(args, "-f", f)
	}
	if o.Values != nil {
		b, err := json.Marshal(o.Values) // JSON is YAML
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, "values.json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, err
		}
		args = append(args, "-f", f)
	}
	return args, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// run runs helm with args plus o's flags and returns stdout; a failure's
// error holds helm's stderr.
func run(o Options, args ...string) ([]byte, error) {
	helm, err := Helm()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "rvsync-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	flags, err := o.args(tmp)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, append(args, flags...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// keep helm away from the user's kube and helm configuration
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cmpOr(o.Kubeconfig, filepath.Join(tmp, "no-kubeconfig")),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "cache"), "HELM_CONFIG_HOME="+filepath.Join(tmp, "config"), "HELM_DATA_HOME="+filepath.Join(tmp, "data"))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// chartOf returns the chart o names, else the repository's.
func chartOf(o Options) (string, error) {
	if o.Chart != "" {
		return o.Chart, nil
	}
	return Dir()
}

// Lint runs `helm lint --strict` over the chart with o's values.
func Lint(o Options) error {
	dir, err := chartOf(o)
	if err != nil {
		return err
	}
	_, err = run(o, "lint", "--strict", "--kube-version", KubeVersion, dir)
	return err
}

// Template runs `helm template` and returns the rendered objects.
func Template(o Options) (Manifests, error) {
	dir, err := chartOf(o)
	if err != nil {
		return nil, err
	}
	out, err := template(dir, o)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// TemplateArgs runs `helm template` of o's chart with o and extra helm
// flags as a user types them (--set, --set-string, --set-json, -f).
func TemplateArgs(o Options, flags ...string) (Manifests, error) {
	dir, err := chartOf(o)
	if err != nil {
		return nil, err
	}
	out, err := template(dir, o, flags...)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// template runs `helm template` of the chart in dir with o and extra flags.
func template(dir string, o Options, flags ...string) ([]byte, error) {
	args := []string{"template", cmpOr(o.Release, Name), dir, "--kube-version", KubeVersion}
	if !o.WithoutOperator {
		for _, v := range OperatorAPIs {
			args = append(args, "--api-versions", v)
		}
	}
	return run(o, append(args, flags...)...)
}

// Install runs `helm install` of the chart as release o.Release into
// o.Namespace of the cluster o.Kubeconfig. It does not wait for the pods.
func Install(o Options) error {
	dir, err := chartOf(o)
	if err != nil {
		return err
	}
	_, err = run(o, "install", cmpOr(o.Release, Name), dir)
	return err
}

// Upgrade runs `helm upgrade` of release o.Release with o's values.
func Upgrade(o Options) error {
	dir, err := chartOf(o)
	if err != nil {
		return err
	}
	_, err = run(o, "upgrade", cmpOr(o.Release, Name), dir)
	return err
}

// Uninstall runs `helm uninstall` of release o.Release (o's values files
// and values are not used).
func Uninstall(o Options) error {
	o.ValuesFiles, o.Values = nil, nil
	_, err := run(o, "uninstall", cmpOr(o.Release, Name))
	return err
}

// Package runs `helm package` of the repository's chart into dir and
// returns the .tgz, as a release packages it.
func Package(dir string) (string, error) {
	src, err := Dir()
	if err != nil {
		return "", err
	}
	v, err := Version()
	if err != nil {
		return "", err
	}
	if _, err := run(Options{}, "package", src, "-d", dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", Name, v)), nil
}

// Show runs `helm show <what>` (chart, values, readme) of a chart
// directory or .tgz.
func Show(what, chartRef string) ([]byte, error) {
	return run(Options{}, "show", what, chartRef)
}

// Decode splits a multi-document YAML stream into objects, skipping empty
// documents.
func Decode(stream []byte) (Manifests, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var out Manifests
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode manifests: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// Notes renders the chart's NOTES.txt as `helm install` would print it for
// o, without a cluster: `helm template` skips NOTES.txt, so a copy of the
// chart wraps it in a template of its own that helm renders as usual.
func Notes(o Options) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "rvsync-notes-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	chartCopy := filepath.Join(tmp, Name)
	if err := os.CopyFS(chartCopy, os.DirFS(dir)); err != nil {
		return "", err
	}
	notes := filepath.Join(chartCopy, "templates", "NOTES.txt")
	text, err := os.ReadFile(notes)
	if err != nil {
		return "", err
	}
	wrapped := "{{- define \"rvsync-test.notes\" }}" + string(text) + "{{- end }}\nnotes: {{ include \"rvsync-test.notes\" . | toJson }}\n"
	if err := os.Remove(notes); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(chartCopy, "templates", "notes.yaml"), []byte(wrapped), 0o600); err != nil {
		return "", err
	}
	out, err := template(chartCopy, o, "--show-only", "templates/notes.yaml")
	if err != nil {
		return "", err
	}
	var doc struct {
		Notes string `json:"notes"`
	}
	if err := utilyaml.Unmarshal(out, &doc); err != nil {
		return "", fmt.Errorf("rendered notes: %w", err)
	}
	return doc.Notes, nil
}
