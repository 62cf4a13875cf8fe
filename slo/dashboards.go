package slo

// Dashboard UIDs and variable names that links into the dashboards use:
// the alerts' dashboard_url annotations, and the overview's links to the
// resource dashboard. The dashboards package builds its dashboards with
// these, and a test of the alerts checks them against its output.
const (
	DashboardOverviewUID = "rvsync-overview" // overview of every resource
	DashboardResourceUID = "rvsync-resource" // one resource in detail
	DashboardVarCluster  = "cluster"         // variable holding the cluster label's value
	DashboardVarResource = "resource"        // variable holding the resource
)
