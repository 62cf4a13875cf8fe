package resolve

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Resolved is a configured resource found in discovery.
type Resolved struct {
	config.ResourceConfig
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// UnknownResourceError reports configured resources that discovery does not
// serve, or serves without list and watch.
type UnknownResourceError struct{ Problems []string }

func (e *UnknownResourceError) Error() string {
	return "resources: " + strings.Join(e.Problems, "; ")
}

// SplitName splits `plural.group` into its plural and group ("" for core).
func SplitName(name string) (plural, group string) {
	plural, group, _ = strings.Cut(name, ".")
	return plural, group
}

// Resolve maps each configured resource to the preferred version its API
// group serves. Discovery that fails for some groups (an aggregated API
// that is down) fails only the resources of those groups.
func Resolve(dc discovery.DiscoveryInterface, resources []config.ResourceConfig) ([]Resolved, error) {
	lists, err := dc.ServerPreferredResources()
	var groupErr *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &groupErr) {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	type entry struct {
		gvr        schema.GroupVersionResource
		namespaced bool
		kind       string
		verbs      metav1.Verbs
	}
	served := map[string]entry{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // subresource
			}
			served[catalog.ResourceValue(gv.Group, r.Name)] = entry{gv.WithResource(r.Name), r.Namespaced, r.Kind, r.Verbs}
		}
	}
	var out []Resolved
	var problems []string
	for _, rc := range resources {
		e, ok := served[rc.Name]
		if !ok {
			_, group := SplitName(rc.Name)
			if groupErr != nil && groupFailed(groupErr, group) {
				problems = append(problems, fmt.Sprintf("%s: its API group %q failed discovery", rc.Name, group))
			} else {
				problems = append(problems, fmt.Sprintf("%s: not served by the API server (check `kubectl api-resources`; names are plural.group, e.g. deployments.apps)", rc.Name))
			}
			continue
		}
		if !slices.Contains(e.verbs, "list") || !slices.Contains(e.verbs, "watch") {
			problems = append(problems, fmt.Sprintf("%s: does not support list and watch", rc.Name))
			continue
		}
		out = append(out, Resolved{ResourceConfig: rc, GVR: e.gvr, Kind: e.kind, Namespaced: e.namespaced})
	}
	if len(problems) > 0 {
		return out, &UnknownResourceError{Problems: problems}
	}
	return out, nil
}

func groupFailed(e *discovery.ErrGroupDiscoveryFailed, group string) bool {
	for gv := range e.Groups {
		if gv.Group == group {
			return true
		}
	}
	return false
}
