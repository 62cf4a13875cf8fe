package sim

// regressionsInvariant implements the docs/simulation.md row "RV regressions":
// a regression is counted only when etcd was restored, at most once per
// restore of the resource's etcd (Checker.restores, counted at every scrape),
// whichever sign shows it first. Waiver: mixedRestores.
//
// Rule: "regression without restore".
type regressionsInvariant struct{}

func (regressionsInvariant) row() string { return "RV regressions" }

func (regressionsInvariant) check(c *Checker, v *resourceAt) {
	if n := c.mixedRestores(v); int(v.sig.Regressions) > n {
		c.fail(v, "regression without restore", "%.0f regressions counted, %d restores of etcd %q", v.sig.Regressions, n, v.etcd)
	}
}

// mixedRestores is how many restores v's resource may count: those of its
// etcd, and, in a world whose monitor never starts (no head probe reads
// which etcd each resource of a space answers from), those of every etcd
// its configured RV space mixes in: a canary's write below the reads shows
// a restore of the space, not of which etcd. docs/simulation.md: RV
// regressions, "a monitor whose Start never runs".
func (c *Checker) mixedRestores(v *resourceAt) int {
	if !c.h.Setup.NoStart || !c.h.mixedSpace(v.r) {
		return c.restores[v.etcd]
	}
	n, seen := 0, map[string]bool{}
	for _, o := range c.h.Setup.Resources {
		if e := o.EtcdName(); o.Space == v.r.Space && !seen[e] {
			seen[e] = true
			n += c.restores[e]
		}
	}
	return n
}
