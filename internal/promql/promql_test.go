package promql

import "testing"

func TestMatchersAndNumbers(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Eq("slo", "rv-lag"), `slo="rv-lag"`},
		{Neq("kind", "probe"), `kind!="probe"`},
		{Re("kind", "list", "probe"), `kind=~"list|probe"`},
		{Num(0.99), "0.99"},
		{Num(30), "30"},
		{Le(1.5), `le="1.5"`},
		{Le(30), `le=~"30(\\.0)?"`},
		{Selector("up"), "up"},
		{Selector("up", "", `job="x"`), `up{job="x"}`},
		{Selector("m", `a="1"`, `b="2"`), `m{a="1", b="2"}`},
		{By("cluster", "resource"), "by (cluster, resource)"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
