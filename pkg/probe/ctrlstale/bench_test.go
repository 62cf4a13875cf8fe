package ctrlstale

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// cacheStub answers every Get at once, so a benchmark sees only what the
// check adds to a cache read.
type cacheStub struct{ client.Client }

func (cacheStub) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

type idKey struct{}

// BenchmarkGet is the cost of the check for a Get it does not sample: the
// unsampled per-read cost every reconcile pays once the check is on,
// against the same cache read without the hook (plain).
func BenchmarkGet(b *testing.B) {
	sr, err := probe.New(probe.Options{}).StaleReads(probe.StaleReadOptions{Fraction: 1e-12}, &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	const id = "6f1c8f4e-3b2a-4c1d-9e8f-7a6b5c4d3e2f" // a reconcile ID; Fraction 1e-12 samples none
	if sr.Sampled(id) {
		b.Fatal("the benchmark's reconcile ID is sampled")
	}
	ctx := context.WithValue(context.Background(), idKey{}, types.UID(id))
	checked := &checkedClient{Client: cacheStub{}, sr: sr, reconcileID: func(ctx context.Context) types.UID {
		id, _ := ctx.Value(idKey{}).(types.UID)
		return id
	}}
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	var cm corev1.ConfigMap
	for _, c := range []struct {
		name string
		c    client.Client
		ctx  context.Context
	}{
		{"plain", cacheStub{}, ctx},
		{"unsampled", checked, ctx},
		{"outside-reconcile", checked, context.Background()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.c.Get(c.ctx, key, &cm)
			}
		})
	}
}
