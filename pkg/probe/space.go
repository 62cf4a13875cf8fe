package probe

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// headFunc returns the current head resource version of one resource: the
// RV of a consistent List with limit=1.
type headFunc func(ctx context.Context) (string, error)

// metadataHead returns a headFunc that lists gvr's metadata with limit=1 and
// resourceVersion "" — a consistent read that kube-apiserver (1.34+) serves
// from its watch cache after one single-key etcd read. Give it a client with
// its own connection, not the informers': a half-open informer connection
// must not blind the probe meant to expose it.
func metadataHead(client metadata.Interface, gvr schema.GroupVersionResource) headFunc {
	return func(ctx context.Context) (string, error) {
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		return list.GetResourceVersion(), nil
	}
}

type headSource struct {
	resource string
	head     headFunc
}

// space is an RV space: the resources whose RVs come from one etcd (by
// default, the whole cluster). One head probe serves all of them, so the
// API-server cost does not grow with the number of resources.
type space struct {
	name     string
	timeline *timeline
	clock    clock.PassiveClock
	metrics  *metrics
	log      logr.Logger

	mu          sync.Mutex
	trackers    []*tracker
	sources     []headSource
	good        int  // index of the source that answered last
	opaque      bool // the head RV is not an integer
	lastDropped uint64
}

// probing reports whether the space has a head probe that answered.
func (s *space) probing() bool {
	_, _, ok := s.timeline.Latest()
	return ok
}

func (s *space) addTracker(t *tracker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trackers = append(s.trackers, t)
}

func (s *space) addSource(src headSource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources = append(s.sources, src)
}

// probe reads the head once: from the source that answered last, falling
// back through the others (a resource may be forbidden or gone), then
// updates every tracker of the space.
func (s *space) probe(ctx context.Context, timeout time.Duration) {
	s.mu.Lock()
	sources, good := append([]headSource(nil), s.sources...), s.good
	s.mu.Unlock()
	for i := range sources {
		idx := (good + i) % len(sources)
		src := sources[idx]
		start := s.clock.Now()
		pctx, cancel := context.WithTimeout(ctx, timeout)
		rvs, err := src.head(pctx)
		cancel()
		now := s.clock.Now()
		result := catalog.ResultSuccess
		if err != nil {
			result = catalog.ResultError
		}
		s.metrics.ListDuration.WithLabelValues(src.resource, catalog.KindProbe, result).Observe(now.Sub(start).Seconds())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.metrics.HeadProbeErrors.WithLabelValues(src.resource, reasonOf(err)).Inc()
			s.log.V(1).Info("head probe failed", "space", s.name, "resource", src.resource, "err", err)
			continue
		}
		s.mu.Lock()
		s.good = idx
		s.mu.Unlock()
		s.record(src.resource, rvs, start)
		return
	}
}

// record adds a head sample taken at t (the probe's start: the List saw at
// least everything committed before it was sent) and updates the trackers.
func (s *space) record(resource, rvs string, t time.Time) {
	rv, ok := parseRV(rvs)
	s.mu.Lock()
	firstOpaque := !ok && !s.opaque
	s.opaque = !ok
	trackers := append([]*tracker(nil), s.trackers...)
	s.mu.Unlock()
	if !ok {
		if firstOpaque {
			s.metrics.HeadProbeErrors.WithLabelValues(resource, catalog.ReasonOpaqueRV).Inc()
			s.log.Info("head resource version is not an integer; lag math is off for this RV space", "space", s.name, "resource", resource, "rv", rvs)
		}
		return
	}
	regressed := s.timeline.Add(t, rv)
	if regressed {
		s.log.Info("head resource version went backwards (etcd restored?); history reset", "space", s.name, "rv", rv)
	}
	dropped := s.timeline.Dropped()
	s.mu.Lock()
	delta := dropped - s.lastDropped
	s.lastDropped = dropped
	s.mu.Unlock()
	for _, tr := range trackers {
		if delta > 0 {
			s.metrics.TimelineDropped.WithLabelValues(tr.name).Add(float64(delta))
		}
		tr.onProbe(rv, regressed)
	}
}
