//go:build integration

package e2e

import (
	"fmt"
	"regexp"
	"strings"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// serviceMonitorScrapeConfigs turns a ServiceMonitor into the Prometheus
// scrape configs the Prometheus Operator generates for it: Kubernetes
// service discovery of EndpointSlices in its namespaces (through
// kubeconfig), kept when the Service carries every selector label and the
// port has the endpoint's name; namespace, service, pod, container, job
// (the Service name) and endpoint target labels; then the ServiceMonitor's
// own relabelings and metric relabelings. A Prometheus without the
// operator scrapes the chart's pods the way one with it would.
func serviceMonitorScrapeConfigs(sm *monv1.ServiceMonitor, kubeconfig string) ([]any, error) {
	if len(sm.Spec.Selector.MatchExpressions) > 0 {
		return nil, fmt.Errorf("ServiceMonitor %s: matchExpressions are not translated", sm.Name)
	}
	namespaces := sm.Spec.NamespaceSelector.MatchNames
	if len(namespaces) == 0 {
		namespaces = []string{sm.Namespace}
	}
	var out []any
	for i, ep := range sm.Spec.Endpoints {
		if ep.Port == "" {
			return nil, fmt.Errorf("ServiceMonitor %s endpoint %d: only named ports are translated", sm.Name, i)
		}
		var relabel []any
		for k, v := range sm.Spec.Selector.MatchLabels {
			relabel = append(relabel, map[string]any{
				"action":        "keep",
				"source_labels": []string{"__meta_kubernetes_service_label_" + sanitize(k), "__meta_kubernetes_service_labelpresent_" + sanitize(k)},
				"regex":         regexp.QuoteMeta(v) + ";true",
			})
		}
		relabel = append(relabel,
			map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_endpointslice_port_name"}, "regex": regexp.QuoteMeta(ep.Port)},
			replace("__meta_kubernetes_namespace", "namespace"),
			replace("__meta_kubernetes_service_name", "service"),
			replace("__meta_kubernetes_pod_name", "pod"),
			replace("__meta_kubernetes_pod_container_name", "container"),
			replace("__meta_kubernetes_service_name", "job"),
			map[string]any{"target_label": "endpoint", "replacement": ep.Port},
		)
		relabel = append(relabel, relabelConfigs(ep.RelabelConfigs)...)
		sc := map[string]any{
			"job_name": fmt.Sprintf("serviceMonitor/%s/%s/%d", sm.Namespace, sm.Name, i),
			"kubernetes_sd_configs": []any{map[string]any{
				"role":            "endpointslice",
				"kubeconfig_file": kubeconfig,
				"namespaces":      map[string]any{"names": namespaces},
			}},
			"metrics_path":           cmpOr(ep.Path, "/metrics"),
			"scheme":                 cmpOr(ep.Scheme.String(), "http"),
			"relabel_configs":        relabel,
			"metric_relabel_configs": relabelConfigs(ep.MetricRelabelConfigs),
		}
		if ep.Interval != "" {
			sc["scrape_interval"] = string(ep.Interval)
		}
		if ep.ScrapeTimeout != "" {
			sc["scrape_timeout"] = string(ep.ScrapeTimeout)
		}
		if c := sm.Spec.ConvertClassicHistogramsToNHCB; c != nil && *c {
			sc["convert_classic_histograms_to_nhcb"] = true
		}
		out = append(out, sc)
	}
	return out, nil
}

var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// sanitize turns a Kubernetes label name into the suffix of its service
// discovery meta label.
func sanitize(name string) string { return invalidLabelChars.ReplaceAllString(name, "_") }

func replace(source, target string) map[string]any {
	return map[string]any{"source_labels": []string{source}, "target_label": target}
}

// relabelConfigs converts the operator's relabelings into Prometheus's.
func relabelConfigs(rcs []monv1.RelabelConfig) []any {
	var out []any
	for _, rc := range rcs {
		m := map[string]any{}
		if len(rc.SourceLabels) > 0 {
			var ls []string
			for _, l := range rc.SourceLabels {
				ls = append(ls, string(l))
			}
			m["source_labels"] = ls
		}
		if rc.Separator != nil {
			m["separator"] = *rc.Separator
		}
		if rc.TargetLabel != "" {
			m["target_label"] = rc.TargetLabel
		}
		if rc.Regex != "" {
			m["regex"] = rc.Regex
		}
		if rc.Modulus != 0 {
			m["modulus"] = rc.Modulus
		}
		if rc.Replacement != nil {
			m["replacement"] = *rc.Replacement
		}
		if rc.Action != "" {
			m["action"] = strings.ToLower(rc.Action)
		}
		out = append(out, m)
	}
	return out
}
