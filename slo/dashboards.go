package slo

// Dashboard UIDs and variable names that links into the dashboards use:
// the alerts' dashboard_url annotations, and the overview's links to the
// resource dashboard. The dashboards package builds its dashboards with
// these, and a test of the alerts checks them against its output.
const (
	DefaultDashboardUIDPrefix = "rvsync-"
	DashboardOverview         = "overview" // overview of every resource
	DashboardResource         = "resource" // one resource in detail
	// UIDs under DefaultDashboardUIDPrefix.
	DashboardOverviewUID = DefaultDashboardUIDPrefix + DashboardOverview
	DashboardResourceUID = DefaultDashboardUIDPrefix + DashboardResource
	DashboardVarCluster  = "cluster"  // variable holding the cluster label's value
	DashboardVarResource = "resource" // variable holding the resource
)

// DashboardUID is the UID of a dashboard (DashboardOverview,
// DashboardResource) under s.DashboardUIDPrefix.
func (s Spec) DashboardUID(board string) string {
	if s.DashboardUIDPrefix == "" {
		return DefaultDashboardUIDPrefix + board
	}
	return s.DashboardUIDPrefix + board
}
