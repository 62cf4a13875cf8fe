package dashboards

import (
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// TestDrillDown: every dashboard links the others with the same variables
// and time range, and a resource in the Overview's worst-resources table
// opens the resource dashboard at that resource and its cluster.
func TestDrillDown(t *testing.T) {
	for name, cfg := range map[string]Config{"multi-cluster": {}, "single cluster": {SingleCluster: true}} {
		ds := decodeAll(t, cfg)
		uids := map[string]bool{}
		for _, d := range ds {
			uids[d["uid"].(string)] = true
		}
		for file, d := range ds {
			linked := map[string]bool{}
			for _, l := range d["links"].([]any) {
				l := l.(map[string]any)
				uid := strings.TrimSuffix(strings.TrimPrefix(l["url"].(string), "/d/"), "/")
				if !uids[uid] || l["includeVars"] != true || l["keepTime"] != true {
					t.Errorf("%s %s: link %v: want a rendered dashboard with the variables and time", name, file, l)
				}
				linked[uid] = true
			}
			if len(linked) != len(uids)-1 || linked[d["uid"].(string)] {
				t.Errorf("%s %s links %v: want every other dashboard", name, file, linked)
			}
		}
		table := panelTitled(t, ds[FileName(uidOverview)], "Resources, worst first")
		var url string
		for _, o := range path(table, "fieldConfig", "overrides").([]any) {
			o := o.(map[string]any)
			if path(o, "matcher", "options") == catalog.LabelResource {
				for _, p := range o["properties"].([]any) {
					if p := p.(map[string]any); p["id"] == "links" {
						url = p["value"].([]any)[0].(map[string]any)["url"].(string)
					}
				}
			}
		}
		want := "/d/rvsync-resource/?var-resource=${__value.raw}"
		if !cfg.SingleCluster {
			want += `&var-cluster=${__data.fields["cluster"]}`
		}
		if want += "&${__url_time_range}"; url != want {
			t.Errorf("%s: the resource column links %q, want %q", name, url, want)
		}
	}
}
