package workload

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnsureNamespace creates namespace ns if it does not exist.
func EnsureNamespace(ctx context.Context, c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// WriteConfigMaps creates or updates n ConfigMaps named prefix-0…prefix-(n-1)
// in ns, one write each, and returns the RV of the last write.
func WriteConfigMaps(ctx context.Context, c kubernetes.Interface, ns, prefix string, n int) (string, error) {
	var rv string
	for i := range n {
		cm, err := upsertConfigMap(ctx, c, ns, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			return "", err
		}
		rv = cm.ResourceVersion
	}
	return rv, nil
}

func upsertConfigMap(ctx context.Context, c kubernetes.Interface, ns, name string) (*corev1.ConfigMap, error) {
	cms := c.CoreV1().ConfigMaps(ns)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"stamp": stamp}}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, err
	}
	cm.Data = map[string]string{"stamp": stamp}
	return cms.Update(ctx, cm, metav1.UpdateOptions{})
}

// Churn updates `objects` ConfigMaps in ns round-robin at about rate writes
// per second until ctx ends, from enough concurrent writers (one per 40
// writes/s) that a write's round trip does not cap the rate; write errors
// are retried on the next tick, so it survives API-server faults. It returns
// the number of successful writes.
func Churn(ctx context.Context, c kubernetes.Interface, ns string, objects int, rate float64) int {
	return churn(ctx, objects, rate, func(ctx context.Context, name string) error {
		_, err := upsertConfigMap(ctx, c, ns, name)
		return err
	})
}

// ChurnEvents is Churn for core Events: `objects` Events in ns, each
// about a ConfigMap of its name, updated round-robin at about rate writes
// per second. A cluster that keeps events in an etcd of their own
// (--etcd-servers-overrides) writes them there.
func ChurnEvents(ctx context.Context, c kubernetes.Interface, ns string, objects int, rate float64) int {
	return churn(ctx, objects, rate, func(ctx context.Context, name string) error {
		return upsertEvent(ctx, c, ns, name)
	})
}

// churn writes objects churn-0…churn-(objects-1) round-robin at about
// rate writes per second with write, as Churn says, and returns the
// number of successful writes.
func churn(ctx context.Context, objects int, rate float64, write func(ctx context.Context, name string) error) int {
	workers := max(1, int(rate/40))
	var writes atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tick := time.NewTicker(time.Duration(float64(time.Second) * float64(workers) / rate))
			defer tick.Stop()
			for i := w; ; i += workers {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if err := write(wctx, fmt.Sprintf("churn-%d", i%objects)); err == nil {
					writes.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return int(writes.Load())
}

// upsertEvent creates Event name in ns, or counts one more occurrence of it.
func upsertEvent(ctx context.Context, c kubernetes.Interface, ns, name string) error {
	events := c.CoreV1().Events(ns)
	now := metav1.Now()
	ev, err := events.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = events.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name},
			Reason:         "Churn", Message: "written by the test workload", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "rvsync-workload"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	ev.Count++
	ev.LastTimestamp = now
	_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
	return err
}

// ChurnDeployments keeps n Deployments in ns and bumps one's spec (and so
// its generation) every period until ctx ends. No controller runs in a bare
// control plane, so they never converge by themselves.
func ChurnDeployments(ctx context.Context, c kubernetes.Interface, ns string, n int, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for i := 0; ; i++ {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = bumpDeployment(wctx, c, ns, fmt.Sprintf("demo-%d", i%n))
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func bumpDeployment(ctx context.Context, c kubernetes.Interface, ns, name string) error {
	deps := c.AppsV1().Deployments(ns)
	d, err := deps.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = deps.Create(ctx, NewDeployment(ns, name), metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["rvsync.example/stamp"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	return err
}

// NewDeployment returns a minimal valid Deployment.
func NewDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
			},
		},
	}
}
