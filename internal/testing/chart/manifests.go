package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OperatorGroup is the API group of the Prometheus Operator's kinds.
const OperatorGroup = "monitoring.coreos.com"

// Manifests are the objects of one rendering, in output order.
type Manifests []*unstructured.Unstructured

// OfKind returns the objects of a kind.
func (m Manifests) OfKind(kind string) Manifests {
	var out Manifests
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// One returns the only object of a kind, or an error naming how many there are.
func (m Manifests) One(kind string) (*unstructured.Unstructured, error) {
	objs := m.OfKind(kind)
	if len(objs) != 1 {
		return nil, fmt.Errorf("want one %s, rendered %d", kind, len(objs))
	}
	return objs[0], nil
}

// Named returns the object of a kind and name.
func (m Manifests) Named(kind, name string) (*unstructured.Unstructured, error) {
	for _, o := range m.OfKind(kind) {
		if o.GetName() == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("no %s %q rendered", kind, name)
}

// Split separates the Prometheus Operator's objects, whose CRDs a bare API
// server does not serve, from the rest.
func (m Manifests) Split() (core, operator Manifests) {
	for _, o := range m {
		if strings.HasPrefix(o.GetAPIVersion(), OperatorGroup+"/") {
			operator = append(operator, o)
		} else {
			core = append(core, o)
		}
	}
	return core, operator
}

// Into decodes obj into a typed object strictly: a field the type does not
// know is an error, as the API server's strict field validation would make it.
func Into(obj *unstructured.Unstructured, typed any) error {
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(typed); err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
