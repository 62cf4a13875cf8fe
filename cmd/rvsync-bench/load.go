package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/internal/testenv"
)

// objectSet names the benchmark's ConfigMaps: n objects spread round-robin
// over namespaces bench-0 … bench-(namespaces-1).
type objectSet struct {
	n, namespaces int
}

func (s objectSet) namespace(i int) string { return "bench-" + strconv.Itoa(i%s.namespaces) }
func (s objectSet) name(i int) string      { return "cm-" + strconv.Itoa(i) }

// configMap is object i with a payload, labels and an annotation like a
// typical small ConfigMap; version goes into its data so every update is a
// real change (an update that changes nothing writes nothing to etcd).
func (s objectSet) configMap(i int, version int64) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.namespace(i),
			Name:        s.name(i),
			Labels:      map[string]string{"app.kubernetes.io/name": "rvsync-bench", "app.kubernetes.io/instance": s.namespace(i)},
			Annotations: map[string]string{"bench.rvsync.io/description": "object created by rvsync-bench for the overhead benchmark"},
		},
		Data: map[string]string{"payload": strings.Repeat("x", 64), "version": strconv.FormatInt(version, 10)},
	}
}

// create makes the namespaces and objects with workers concurrent writers,
// skipping objects that exist; it returns how many it created.
func (s objectSet) create(ctx context.Context, c kubernetes.Interface, workers int) (int64, error) {
	for ns := range s.namespaces {
		if err := testenv.EnsureNamespace(ctx, c, s.namespace(ns)); err != nil {
			return 0, err
		}
	}
	var created, next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= s.n || ctx.Err() != nil {
					return
				}
				cm := s.configMap(i, 0)
				_, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
				switch {
				case err == nil:
					created.Add(1)
				case apierrors.IsAlreadyExists(err):
				default:
					once.Do(func() { firstErr = fmt.Errorf("create %s/%s: %w", cm.Namespace, cm.Name, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return created.Load(), firstErr
}

// churnResult is what a churn period achieved.
type churnResult struct {
	writes, errors, skipped int64
}

// churn updates the objects round-robin at rate writes per second, with
// workers concurrent writers, until ctx ends. Unconditional updates (no
// resourceVersion) need no read first, so the API server sees only the
// benchmark's PUTs. Writes that cannot start on time (the API server is
// saturated) are skipped and counted rather than queued.
func (s objectSet) churn(ctx context.Context, c kubernetes.Interface, rate float64, workers int, version *atomic.Int64) churnResult {
	jobs := make(chan int, workers)
	var res churnResult
	var writes, errs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				cm := s.configMap(i, version.Add(1))
				wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Update(wctx, cm, metav1.UpdateOptions{}); err != nil {
					errs.Add(1)
				} else {
					writes.Add(1)
				}
				cancel()
			}
		})
	}
	const tick = 10 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start, sent, next := time.Now(), 0.0, 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-t.C:
			due := rate * now.Sub(start).Seconds()
			for ; sent < due; sent++ {
				select {
				case jobs <- next % s.n:
					next++
				default:
					res.skipped++
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	res.writes, res.errors = writes.Load(), errs.Load()
	return res
}
