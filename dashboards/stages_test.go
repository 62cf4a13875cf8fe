package dashboards

import (
	"strings"
	"testing"

	"github.com/rvsync-slo/rvsync-slo/slo"
)

// TestWhereIsTheDelayComesFirst: the resource dashboard opens on the row
// a page's reader wants first, where the delay is; it shows the worst
// stage and every stage rule, and says how to join the API servers'
// metrics when there are none (the join count falls back to 0, which
// reads as what to set).
func TestWhereIsTheDelayComesFirst(t *testing.T) {
	d := decodeAll(t, Config{})[FileName(uidResource)]
	ps := panels(d)
	if len(ps) == 0 || ps[0]["type"] != "row" || ps[0]["title"] != "Where is the delay" {
		t.Fatalf("the resource dashboard starts with %v %q, want the row Where is the delay", ps[0]["type"], ps[0]["title"])
	}
	read := map[string]bool{}
	for _, p := range ps[1:] {
		if p["type"] == "row" {
			break
		}
		for _, tg := range targets(p) {
			for _, r := range slo.StageRules() {
				if readsSeries(tg["expr"].(string), r) {
					read[r] = true
				}
			}
		}
		if !strings.Contains(p["description"].(string), "slo.apiServerJob") && p["title"] != "Delay by stage" && p["type"] == "stat" {
			t.Errorf("%s: its description does not say how to join the API servers' metrics", p["title"])
		}
	}
	for _, r := range slo.StageRules() {
		if !read[r] {
			t.Errorf("no panel of the row reads %s", r)
		}
	}
	joined := panelTitled(t, d, "API servers joined")
	if expr := targets(joined)[0]["expr"].(string); !strings.HasSuffix(expr, " or vector(0)") {
		t.Errorf("API servers joined: %s has no sample without the API servers' series", expr)
	}
	text, _ := path(joined, "fieldConfig", "defaults", "mappings").([]any)
	if len(text) != 1 || !strings.Contains(path(text[0], "options", "0", "text").(string), "slo.apiServerJob") {
		t.Errorf("API servers joined: mappings %v do not turn 0 into what to set", text)
	}
}
