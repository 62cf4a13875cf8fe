package alerts

import (
	"encoding/json"
	"strings"
	"testing"
	"text/template"

	"github.com/rvsync-slo/rvsync-slo/dashboards"
	"github.com/rvsync-slo/rvsync-slo/slo"
)

// TestSeverities: the severity label is the ecosystem's critical/warning by
// default and follows Spec.Severities; a spec that cannot tell pages from
// tickets is refused.
func TestSeverities(t *testing.T) {
	for _, tt := range []struct {
		sev          slo.SeverityLabels
		page, ticket string
	}{
		{slo.SeverityLabels{}, "critical", "warning"},
		{slo.SeverityLabels{Page: "P1", Ticket: "P3"}, "P1", "P3"},
	} {
		spec := slo.DefaultSpec()
		spec.Severities = tt.sev
		got := map[string]string{}
		for _, r := range rules(t, spec) {
			if r.Alert != "" {
				got[r.Alert+"/"+r.Labels[slo.LabelLongWindow]] = r.Labels[slo.LabelSeverity]
			}
		}
		for alert, want := range map[string]string{
			AlertWatchStalled + "/": tt.page, AlertExporterDown + "/": tt.ticket,
			burnAlertName(slo.CacheStaleness) + "/1h": tt.page, burnAlertName(slo.CacheStaleness) + "/3d": tt.ticket,
		} {
			if got[alert] != want {
				t.Errorf("severities %+v: %s has severity %q, want %q", tt.sev, alert, got[alert], want)
			}
		}
	}
	spec := slo.DefaultSpec()
	spec.Severities = slo.SeverityLabels{Page: "high", Ticket: "high"}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "severities") {
		t.Errorf("page and ticket both high: want a severities error, got %v", err)
	}
}

// TestDashboardURLs: every alert's dashboard_url opens a dashboard the
// dashboards package renders, with variables it has, at the alert's
// resource and cluster; GrafanaURL prefixes it.
func TestDashboardURLs(t *testing.T) {
	boards, err := dashboards.Render(dashboards.Config{Spec: slo.DefaultSpec()})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]string{} // uid → variable names
	for _, b := range boards {
		var d struct {
			UID        string `json:"uid"`
			Templating struct {
				List []struct {
					Name string `json:"name"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Templating.List {
			vars[d.UID] = append(vars[d.UID], v.Name)
		}
	}
	spec := slo.DefaultSpec()
	spec.GrafanaURL = "https://grafana.example.com/"
	labels := map[string]string{"resource": "deployments.apps", "cluster": "prod"}
	for _, r := range rules(t, spec) {
		if r.Alert == "" {
			continue
		}
		url := expand(t, r.Annotations[annotationDashboardURL], labels)
		uid, query, ok := strings.Cut(strings.TrimPrefix(url, "https://grafana.example.com/d/"), "/?")
		if !ok || !strings.HasPrefix(url, "https://grafana.example.com/d/") {
			t.Errorf("%s: dashboard_url %q: want https://grafana.example.com/d/<uid>/?<variables>", r.Alert, url)
			continue
		}
		if _, exists := vars[uid]; !exists {
			t.Errorf("%s: dashboard_url %q opens dashboard %q, which is not rendered", r.Alert, url, uid)
		}
		want := "var-resource=deployments.apps&var-cluster=prod"
		if uid == slo.DashboardOverviewUID {
			want = "var-cluster=prod"
		}
		if query != want {
			t.Errorf("%s: dashboard_url variables %q, want %q", r.Alert, query, want)
		}
		for _, kv := range strings.Split(query, "&") {
			name := strings.TrimPrefix(strings.SplitN(kv, "=", 2)[0], "var-")
			if !strings.Contains(strings.Join(vars[uid], ","), name) {
				t.Errorf("%s: dashboard %s has no variable %q (has %v)", r.Alert, uid, name, vars[uid])
			}
		}
	}
}

// expand renders an annotation template as Prometheus does for the labels
// (only $labels is needed by dashboard_url).
func expand(t *testing.T, text string, labels map[string]string) string {
	t.Helper()
	tmpl, err := template.New("a").Parse("{{ $labels := .Labels }}" + text)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, struct{ Labels map[string]string }{labels}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDashboardRunbookLinksNameAlerts: the runbook links on the dashboards'
// panels (the dashboards package names the alerts itself: it may not
// import this one) name alerts these rules have, at their runbook_url.
func TestDashboardRunbookLinksNameAlerts(t *testing.T) {
	boards, err := dashboards.Render(dashboards.Config{Spec: slo.DefaultSpec()})
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	for _, r := range rules(t, slo.DefaultSpec()) {
		if r.Alert != "" {
			urls[r.Alert] = r.Annotations[annotationRunbookURL]
		}
	}
	n := 0
	for name, b := range boards {
		var d struct {
			Panels []struct {
				Title string
				Links []struct{ Title, URL string }
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			for _, l := range p.Links {
				alert, ok := strings.CutPrefix(l.Title, "Runbook: ")
				if !ok {
					continue
				}
				n++
				if urls[alert] == "" || l.URL != urls[alert] {
					t.Errorf("%s panel %q links %s at %s; the rules' runbook_url is %q", name, p.Title, alert, l.URL, urls[alert])
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("%d runbook links on the dashboards' panels", n)
	}
}
