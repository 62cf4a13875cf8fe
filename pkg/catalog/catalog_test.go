package catalog

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

var metricName = regexp.MustCompile(`^rvsync_[a-z0-9_]+$`)

func TestFamiliesFollowNamingConventions(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if !metricName.MatchString(m.Name) {
			t.Errorf("%s: not a snake_case rvsync_ name", m.Name)
		}
		if seen[m.Name] {
			t.Errorf("%s declared twice", m.Name)
		}
		seen[m.Name] = true
		if m.Help == "" {
			t.Errorf("%s: no help text", m.Name)
		}
		if m.Type == Counter && !strings.HasSuffix(m.Name, "_total") {
			t.Errorf("%s: counter without _total", m.Name)
		}
		if m.Type != Counter && strings.HasSuffix(m.Name, "_total") {
			t.Errorf("%s: _total on a %s", m.Name, m.Type)
		}
		if m.Unit == "seconds" && !strings.HasSuffix(m.Name, "_seconds") {
			t.Errorf("%s: seconds unit without _seconds suffix", m.Name)
		}
		if (m.Type == Histogram) != (len(m.Buckets) > 0) {
			t.Errorf("%s: buckets must be set exactly for histograms", m.Name)
		}
		if !slices.IsSorted(m.Buckets) {
			t.Errorf("%s: buckets not sorted", m.Name)
		}
		if m.Name != BuildInfo.Name && !slices.Contains(m.Labels, LabelResource) {
			t.Errorf("%s: every per-resource family needs the %q label", m.Name, LabelResource)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		series string
		want   string
		ok     bool
	}{
		{"rvsync_list_duration_seconds_bucket", ListDuration.Name, true},
		{"rvsync_list_duration_seconds_count", ListDuration.Name, true},
		{"rvsync_relists_total", Relists.Name, true},
		{"rvsync_relists_total_bucket", "", false},
		{"rvsync_resource_version_lag_sum", "", false},
		{"up", "", false},
	} {
		m, ok := Lookup(c.series)
		if ok != c.ok || m.Name != c.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.series, m.Name, ok, c.want, c.ok)
		}
	}
}

func TestResourceValue(t *testing.T) {
	for _, c := range []struct{ group, plural, want string }{
		{"", "pods", "pods"},
		{"apps", "deployments", "deployments.apps"},
		{"wardle.example.com", "flunders", "flunders.wardle.example.com"},
	} {
		if got := ResourceValue(c.group, c.plural); got != c.want {
			t.Errorf("ResourceValue(%q, %q) = %q, want %q", c.group, c.plural, got, c.want)
		}
	}
}
