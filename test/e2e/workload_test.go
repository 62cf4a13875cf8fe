//go:build integration

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// converge plays the Deployment controller, which a bare control plane
// lacks, for n Deployments in ns until ctx ends: each period it either bumps
// one's spec (a new generation) or, if its generation is not yet observed,
// records it in status.observedGeneration. The exporter then sees objects
// unconverged and converging, and observes convergence times of about one
// period. Errors (API server down) are retried on the next tick.
func converge(ctx context.Context, c kubernetes.Interface, ns string, n int, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = convergeOne(wctx, c, ns, fmt.Sprintf("converging-%d", (i/2)%n))
		cancel()
	}
}

func convergeOne(ctx context.Context, c kubernetes.Interface, ns, name string) error {
	deps := c.AppsV1().Deployments(ns)
	d, err := deps.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = deps.Create(ctx, testenv.NewDeployment(ns, name), metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if d.Status.ObservedGeneration < d.Generation {
		d.Status.ObservedGeneration = d.Generation
		_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["e2e.rvsync.io/generation"] = fmt.Sprint(d.Generation + 1)
	_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	return err
}

// describeMetrics renders the rvsync gauges and counters of a scrape, one
// series a line, sorted, for a failure log.
func describeMetrics(m testenv.Metrics) string {
	var lines []string
	for name, fam := range m {
		if !strings.HasPrefix(name, "rvsync_") {
			continue
		}
		for _, mt := range fam.GetMetric() {
			var v float64
			switch {
			case mt.Gauge != nil:
				v = mt.GetGauge().GetValue()
			case mt.Counter != nil:
				v = mt.GetCounter().GetValue()
			default:
				continue
			}
			var ls []string
			for _, l := range mt.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
