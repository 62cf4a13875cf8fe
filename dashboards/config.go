//lint:file-ignore SA1019 Grafana's dashboard sidecar and import load the classic dashboard JSON; dashboardv2 needs Grafana 12's new schema.

package dashboards

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// Config says what the dashboards show and how they select series. The zero
// value is usable: Render fills every empty field from the defaults below.
type Config struct {
	// Spec is the SLO spec the rule generator reads: its Selector, cluster
	// label, SLO thresholds and objectives and burn-rate windows are what the
	// dashboards query and draw, so a panel's red line is the alert's line.
	// Empty fields are taken from slo.DefaultSpec(), as the rule generator
	// takes them.
	Spec slo.Spec
	// SingleCluster hides the cluster variable (it then matches every
	// series, with or without a cluster label) and drops the cluster from
	// legends.
	SingleCluster bool
	// UIDPrefix starts every dashboard UID; default Spec.DashboardUIDPrefix,
	// else "rvsync-". UIDs are stable so links and bookmarks survive
	// regeneration; the chart makes them unique per release.
	UIDPrefix string
	// Tags are set on every dashboard; default ["rvsync-slo"].
	Tags []string
	// Refresh is the auto-refresh interval; default "30s".
	Refresh string
	// TimeFrom is the start of the default time range; default "now-6h".
	TimeFrom string

	// marks, set by RenderHelmTemplates, collects the parts of the
	// dashboards that show one SLO.
	marks *helmMarks
}

// Dashboard UIDs without the prefix, and the file names Render returns.
const (
	uidOverview = "overview"
	uidResource = "resource"
	uidSLOs     = "slos"
)

// FileName returns the file name of the dashboard with the given UID suffix
// ("overview", "resource", "slos"): rvsync-<suffix>.json.
func FileName(uidSuffix string) string { return "rvsync-" + uidSuffix + ".json" }

// withDefaults returns c with every empty field filled in, the Spec as
// slo.Spec.WithDefaults fills it.
func (c Config) withDefaults() Config {
	c.Spec = c.Spec.WithDefaults()
	c.Spec.Selector = strings.Trim(strings.TrimSpace(c.Spec.Selector), ",")
	c.UIDPrefix = cmp.Or(c.UIDPrefix, c.Spec.DashboardUIDPrefix, slo.DefaultDashboardUIDPrefix)
	if len(c.Tags) == 0 {
		c.Tags = []string{"rvsync-slo"}
	}
	c.Refresh = cmp.Or(c.Refresh, "30s")
	c.TimeFrom = cmp.Or(c.TimeFrom, "now-6h")
	return c
}

// validate fails loudly on a Spec the recording rules cannot serve.
func (c Config) validate() error {
	if err := c.Spec.Validate(); err != nil {
		return fmt.Errorf("dashboards: %w", err)
	}
	return nil
}

// windows returns the distinct burn-rate windows of the Spec, short before
// long as they appear in the window table.
func (c Config) windows() []string {
	var ws []string
	for _, w := range c.Spec.Windows {
		for _, d := range []string{w.Short, w.Long} {
			if !slices.Contains(ws, d) {
				ws = append(ws, d)
			}
		}
	}
	return ws
}

// enabledSLOs returns the SLOs that are not disabled, in Spec order.
func (c Config) enabledSLOs() []slo.SLO {
	var out []slo.SLO
	for _, o := range c.Spec.SLOs {
		if !o.Disabled {
			out = append(out, o)
		}
	}
	return out
}

// enabled reports whether the named SLO is in the Spec and not disabled.
func (c Config) enabled(name string) bool {
	o, err := c.Spec.SLO(name)
	return err == nil && !o.Disabled
}

// threshold returns the threshold of an enabled SLO, false when the SLO is
// absent or disabled (its panels then draw no limit line).
func (c Config) threshold(name string) (float64, bool) {
	if !c.enabled(name) {
		return 0, false
	}
	o, _ := c.Spec.SLO(name)
	return limitOf(o), true
}

// builders lists every dashboard by UID suffix, in a stable order.
var builders = []struct {
	uid   string
	build func(Config) (dashboard.Dashboard, error)
}{
	{uidOverview, Overview},
	{uidResource, Resource},
	{uidSLOs, SLOs},
}

// Render builds every dashboard and returns file name → indented JSON. The
// output depends on cfg only, so regenerating is a no-op unless cfg or the
// code changed.
func Render(cfg Config) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, b := range builders {
		d, err := b.build(cfg)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
		}
		data, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
		}
		out[FileName(b.uid)] = append(data, '\n')
	}
	return out, nil
}
