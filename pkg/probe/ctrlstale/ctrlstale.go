package ctrlstale

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Hook turns on the sampled stale-read check for the manager built from o:
// its client (mgr.GetClient()) checks every Get made inside a sampled
// reconcile (told apart by controller-runtime's reconcile ID) with
// probe.StaleReads, built from mon and opts when the manager builds its
// client. Call it on the options before ctrl.NewManager; errors in opts are
// returned by ctrl.NewManager. Gets outside a reconcile, Gets of unsampled
// reconciles and Lists are passed through unchecked.
//
// Use it with ctrlcache.Hook on the same monitor, so that the check can
// place a stale read on the head timeline and time the cache update of the
// object a reconcile was triggered for (see Triggered). The live reads use
// opts.Config, else the monitor's head-probe configuration, else the
// manager's, always on a connection of their own.
//
// It sets o.NewClient, wrapping any constructor already there.
func Hook(mon *probe.Monitor, o *manager.Options, opts probe.StaleReadOptions) {
	newClient := o.NewClient
	if newClient == nil {
		newClient = client.New
	}
	o.NewClient = func(cfg *rest.Config, co client.Options) (client.Client, error) {
		c, err := newClient(cfg, co)
		if err != nil {
			return nil, err
		}
		sr, err := mon.StaleReads(opts, cfg)
		if err != nil {
			return nil, err
		}
		return &checkedClient{Client: c, sr: sr, reconcileID: controller.ReconcileIDFromContext}, nil
	}
}

// checkedClient checks the Gets of sampled reconciles.
type checkedClient struct {
	client.Client
	sr *probe.StaleReads
	// reconcileID is controller-runtime's reconcile ID of a context, ""
	// outside a reconcile (a field so the benchmark can set one)
	reconcileID func(context.Context) types.UID
}

// Get reads key into obj from the wrapped client; inside a sampled
// reconcile, through the stale-read check. An unsampled Get costs a context
// lookup and a hash of the reconcile ID.
func (c *checkedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	id := c.reconcileID(ctx)
	if id == "" || !c.sr.Sampled(string(id)) {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	read := func() (metav1.Object, error) { return obj, c.Client.Get(ctx, key, obj, opts...) }
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	req, ok := ctx.Value(requestKey{}).(types.NamespacedName)
	return c.sr.Check(ctx, probe.StaleRead{
		GVR: mapping.Resource, Namespace: key.Namespace, Name: key.Name,
		Trigger: ok && req == key,
	}, read)
}

// requestKey holds the request of a reconciler wrapped by Triggered.
type requestKey struct{}

// Triggered wraps a reconciler so that the stale-read check knows the
// object each reconcile was triggered for: a sampled reconcile's Get of
// that object also records the delay from the informer's delivery of the
// version read to the read (rvsync_reconcile_read_delay_seconds). Without
// it, only the stale-read counts are recorded.
func Triggered(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return r.Reconcile(context.WithValue(ctx, requestKey{}, req.NamespacedName), req)
	})
}
