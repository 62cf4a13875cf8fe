package chart

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager owns the fields the tests apply.
const FieldManager = "rvsync-chart-test"

// Applier server-side applies objects with strict field validation, creating
// their namespaces first.
type Applier struct {
	dyn    dynamic.Interface
	client kubernetes.Interface
	mapper meta.RESTMapper
}

// NewApplier returns an Applier for the API server of cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Apply applies each object in order. An unknown or misplaced field, a bad
// value or an unknown kind is an error naming the object.
func (a *Applier) Apply(ctx context.Context, objs Manifests) error {
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
		}
		res := dynamic.ResourceInterface(a.dyn.Resource(mapping.Resource))
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if err := a.EnsureNamespace(ctx, o.GetNamespace(), nil); err != nil {
				return err
			}
			res = a.dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		force := true
		if _, err := res.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: FieldManager, FieldValidation: metav1.FieldValidationStrict, Force: &force,
		}); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// EnsureNamespace creates a namespace with labels unless it exists.
func (a *Applier) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	if name == "" {
		return fmt.Errorf("namespaced object without a namespace")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err := a.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
