// Command rvsync-gen writes the generated artifacts of rvsync-slo. Without
// flags (`make generate`) it regenerates what the repository commits: the
// chart's rule template (alerts.RenderHelmTemplate) and dashboards, the
// chart's README (its values table from values.yaml), its copy of LICENSE,
// the README's install section and docs/metrics.md's metric table; CI
// fails when they drift. With --spec it writes
// the rule file and dashboards of your own SLO spec into --out instead.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/alerts"
	"github.com/rvsync-slo/rvsync-slo/dashboards"
	"github.com/rvsync-slo/rvsync-slo/internal/readme"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "rvsync-gen: %v\n", err)
			os.Exit(2)
		}
	}
}

// Paths of the generated files, relative to --out.
const (
	rulesFile     = "rules/rvsync-slo.rules.yaml"
	chartTemplate = "rules/rvsync-slo.rules.tpl.yaml"
	dashboardsDir = "dashboards"
	// dashboardTemplatesDir holds the dashboards as Helm templates
	// (dashboards.RenderHelmTemplates), which the chart renders.
	dashboardTemplatesDir = "dashboard-templates"
)

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("rvsync-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specFile := fs.String("spec", "", "YAML SLO spec (slo.Spec, JSON field names); writes its rule file and dashboards into --out instead of the chart's files")
	out := fs.String("out", "charts/rvsync-slo/files", "directory receiving rules/ and dashboards/")
	readmePath := fs.String("readme", "README.md", "README whose install section (between the INSTALL markers) is regenerated; empty to skip; ignored with --spec")
	metricsPath := fs.String("metrics", "docs/metrics.md", "page whose metric table (between the METRICS markers) is regenerated from pkg/catalog; empty to skip; ignored with --spec")
	routingPath := fs.String("alertmanager", "docs/alertmanager.yaml", "Alertmanager routing of the default alerts (alerts.RenderRouting); empty to skip; ignored with --spec")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	if *specFile == "" {
		if *routingPath != "" {
			routing, err := alerts.RenderRouting(slo.DefaultSpec())
			if err != nil {
				return err
			}
			if err := write(*routingPath, routing); err != nil {
				return err
			}
		}
		return writeChart(*out, *readmePath, *metricsPath)
	}
	b, err := os.ReadFile(*specFile)
	if err != nil {
		return err
	}
	var spec slo.Spec
	if err := yaml.UnmarshalStrict(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", *specFile, err)
	}
	rules, err := alerts.Render(spec)
	if err != nil {
		return err
	}
	if err := write(filepath.Join(*out, rulesFile), rules); err != nil {
		return err
	}
	return writeDashboards(*out, spec)
}

// writeChart regenerates the chart's files, its README (next to the files
// directory out), the README's install section and the metric table.
func writeChart(out, readmePath, metricsPath string) error {
	tpl, err := alerts.RenderHelmTemplate()
	if err != nil {
		return err
	}
	if err := write(filepath.Join(out, chartTemplate), tpl); err != nil {
		return err
	}
	if err := writeDashboards(out, slo.DefaultSpec()); err != nil {
		return err
	}
	templates, err := dashboards.RenderHelmTemplates()
	if err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(templates)) {
		if err := write(filepath.Join(out, dashboardTemplatesDir, n), templates[n]); err != nil {
			return err
		}
	}
	chartDir := filepath.Dir(filepath.Clean(out))
	if err := readme.UpdateChartReadme(chartDir); err != nil {
		return err
	}
	// the packaged chart carries the project's license (LICENSE beside it)
	license, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(chartDir)), "LICENSE"))
	if err != nil {
		return err
	}
	if err := write(filepath.Join(chartDir, "LICENSE"), license); err != nil {
		return err
	}
	if metricsPath != "" {
		if err := readme.UpdateMetrics(metricsPath); err != nil {
			return err
		}
	}
	if readmePath == "" {
		return nil
	}
	v, err := readme.ChartVersion(chartDir)
	if err != nil {
		return err
	}
	return readme.UpdateInstall(readmePath, v)
}

func writeDashboards(out string, spec slo.Spec) error {
	boards, err := dashboards.Render(dashboards.Config{Spec: spec})
	if err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(boards)) {
		if err := write(filepath.Join(out, dashboardsDir, n), boards[n]); err != nil {
			return err
		}
	}
	return nil
}

func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
