package sim

// regressionsInvariant implements the docs/simulation.md row "RV regressions":
// a regression is counted only when etcd was restored, at most once per
// restore of the resource's etcd (Checker.restores, counted at every scrape),
// whichever sign shows it first. No waiver: exact.
//
// Rule: "regression without restore".
type regressionsInvariant struct{}

func (regressionsInvariant) row() string { return "RV regressions" }

func (regressionsInvariant) check(c *Checker, v *resourceAt) {
	if n := c.restores[v.etcd]; int(v.sig.Regressions) > n {
		c.fail(v, "regression without restore", "%.0f regressions counted, %d restores of etcd %q", v.sig.Regressions, n, v.etcd)
	}
}
