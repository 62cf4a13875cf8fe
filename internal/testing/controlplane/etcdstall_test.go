//go:build integration

package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// One API server of three loses etcd (Options.EtcdProxies: its etcd
// proxies stalled, on a three-member etcd as TestHA runs) while the others
// go on. Its watch cache of configmaps, read from its own /metrics, stands
// still through writes made through another server, whose cache and the
// third's follow them; after the release it catches up. Meanwhile, on the
// stalled server: a watch opened before the stall, from an RV below the
// stuck cache's, gets bookmarks at the stuck RV and no event; a watch
// opened during it gets no bookmark, whether from the stuck RV or from
// below it (the cacher sends a watch no bookmark at or below the RV it
// started from, raised by the events it replays to it first); a LIST at
// RV 0 answers from the stuck cache; a consistent LIST fails. The stalled
// server is envtest's server 0, whose proxies Start sets before envtest
// starts it. The timings are logged (docs/testing.md keeps them).
func TestHAServerLosesEtcd(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{APIServers: 3, EtcdMembers: 3, EtcdProxies: true, LogDir: t.TempDir()})
	ctx := testenv.UntilDeadline(t)
	ha := env.HA
	const stalledIdx, writerIdx = 0, 1
	stalled := ha.Servers[stalledIdx]
	checkEtcdProxies(t, ha, 3)
	writer := kubernetes.NewForConfigOrDie(ha.Direct(env.Config, writerIdx))
	onStalled := kubernetes.NewForConfigOrDie(ha.Direct(env.Config, stalledIdx))

	// a watch on the server to stall, then a write it and every server's
	// cache of configmaps holds
	rv0 := parseRV(t, write(ctx, t, writer, "first", 1))
	before := startWatch(ctx, t, onStalled, rv0, 600)
	stallAt, stuck := stallAfter(ctx, t, ha, stalledIdx, parseRV(t, write(ctx, t, writer, "second", 1)))
	// watches opened during the stall, from below the stuck RV and from
	// it, whose bookmark before their timeout is due 2 s before it
	duringOld := startWatch(ctx, t, onStalled, rv0, 20)
	duringStuck := startWatch(ctx, t, onStalled, stuck, 20)

	last := writeAround(ctx, t, ha, writer, stalledIdx, stallAt)

	// what the stalled server answers meanwhile, side by side
	var probes sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]error{}
	probe := func(what string, f func(context.Context) (string, error)) {
		probes.Add(1)
		go func() {
			defer probes.Done()
			pctx, cancel := context.WithTimeout(ctx, 75*time.Second)
			defer cancel()
			start := time.Now()
			got, err := f(pctx)
			t.Logf("stalled server, %s: %s, err %v, after %v", what, got, err, since(start))
			mu.Lock()
			answers[what] = err
			mu.Unlock()
		}()
	}
	list := func(rv string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			l, err := onStalled.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				return "", err
			}
			if rv == "0" && l.ResourceVersion != strconv.FormatUint(stuck, 10) {
				err = fmt.Errorf("answered at RV %s, not the stuck cache's %d", l.ResourceVersion, stuck)
			}
			return fmt.Sprintf("%d items at RV %s", len(l.Items), l.ResourceVersion), err
		}
	}
	const consistentList, cachedList = "consistent LIST", "LIST at RV 0"
	probe(consistentList, list(""))
	probe(cachedList, list("0"))
	probe(fmt.Sprintf("LIST at the writes' RV %d", last), list(strconv.FormatUint(last, 10)))
	probe("WATCH from now (RV unset)", firstEvent(onStalled, ""))
	probe(fmt.Sprintf("WATCH from the writes' RV %d", last), firstEvent(onStalled, strconv.FormatUint(last, 10)))
	probe("watch-list (sendInitialEvents, RV unset)", func(ctx context.Context) (string, error) {
		yes := true
		w, err := onStalled.CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{
			SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
		if err != nil {
			return "", err
		}
		defer w.Stop()
		var got []string
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return strings.Join(append(got, "closed"), ", "), nil
				}
				got = append(got, describe(ev))
				if ev.Type == watch.Bookmark || ev.Type == watch.Error {
					return strings.Join(got, ", "), nil
				}
			case <-ctx.Done():
				return strings.Join(append(got, "then nothing"), ", "), ctx.Err()
			}
		}
	})
	probe("/readyz", func(ctx context.Context) (string, error) {
		b, err := onStalled.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "1").DoRaw(ctx)
		failed := slices.DeleteFunc(strings.Split(string(b), "\n"), func(l string) bool { return !strings.HasPrefix(l, "[-]") })
		if len(failed) > 0 {
			return "failing " + strings.Join(failed, " "), nil
		}
		return string(b), err
	})

	// the cacher bookmarks a watch about a minute after it starts, and 2 s
	// before its timeout
	if err := pollFor(ctx, 2*time.Minute, "a bookmark on the watch "+before.name, before.bookmarked); err != nil {
		t.Error(err)
	}
	for _, w := range []*recorder{duringOld, duringStuck} {
		if err := pollFor(ctx, 2*time.Minute, "the end of the watch "+w.name, w.ended); err != nil {
			t.Error(err)
		}
	}
	probes.Wait()
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
	checkStuck(ctx, t, stalled, stuck, stallAt)
	for _, w := range []*recorder{before, duringOld, duringStuck} {
		t.Logf("watch %s during the stall: %s", w.name, w.summary())
		if w.maxRV() > stuck {
			t.Errorf("watch %s got past the stuck cache's RV %d with its etcd stalled", w.name, stuck)
		}
	}
	if rv, ok := before.lastBookmark(); ok && rv != stuck {
		t.Errorf("watch %s: a bookmark at RV %d, not the stuck cache's %d", before.name, rv, stuck)
	}
	for _, w := range []*recorder{duringOld, duringStuck} {
		if _, ok := w.lastBookmark(); ok {
			t.Errorf("watch %s got a bookmark with its server's etcd stalled: %s", w.name, w.summary())
		}
	}
	if answers[consistentList] == nil {
		t.Errorf("a consistent LIST through the stalled server succeeded")
	}
	if err := answers[cachedList]; err != nil {
		t.Errorf("a LIST at RV 0 through the stalled server: %v", err)
	}

	release(ctx, t, stalled, last, stallAt)
	if err := pollFor(ctx, time.Minute, "the watch "+before.name+" delivers the writes", before.reached(last)); err != nil {
		t.Error(err)
	}
	t.Logf("watch %s after the release: %s", before.name, before.summary())
}

// The same fault on a single etcd, on a server Start added beside
// envtest's: of two API servers, the second loses etcd; its cache stands
// still while the first's follows the writes and then etcd's progress
// notifications past them, and catches up after.
func TestHAServerLosesItsOneEtcd(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{APIServers: 2, EtcdProxies: true, LogDir: t.TempDir()})
	ctx := testenv.UntilDeadline(t)
	ha := env.HA
	checkEtcdProxies(t, ha, 1)
	const stalledIdx = 1
	writer := kubernetes.NewForConfigOrDie(ha.Direct(env.Config, 0))
	stallAt, stuck := stallAfter(ctx, t, ha, stalledIdx, parseRV(t, write(ctx, t, writer, "first", 1)))
	last := writeAround(ctx, t, ha, writer, stalledIdx, stallAt)
	// the API servers' own writes (leases) move etcd's revision, which
	// its progress notifications carry to every cache that follows it
	if _, err := waitCacheRV(ctx, ha.Servers[0], last+1, time.Minute); err != nil {
		t.Fatal(err)
	}
	checkStuck(ctx, t, ha.Servers[stalledIdx], stuck, stallAt)
	release(ctx, t, ha.Servers[stalledIdx], last, stallAt)
}

// checkEtcdProxies checks that every server reaches etcd through n
// proxies of its own, named by its --etcd-servers.
func checkEtcdProxies(t *testing.T, ha *testenv.HA, n int) {
	t.Helper()
	seen := map[*faultproxy.Proxy]string{}
	for _, s := range ha.Servers {
		var through []string
		for _, p := range s.EtcdProxies {
			if o, ok := seen[p]; ok {
				t.Fatalf("%s and %s share an etcd proxy", o, s.Name)
			}
			seen[p] = s.Name
			through = append(through, "http://"+p.Addr())
		}
		flag := "--etcd-servers=" + strings.Join(through, ",")
		if len(s.EtcdProxies) != n || !slices.Contains(s.Process.Args, flag) {
			t.Fatalf("%s has %d etcd proxies and flags %v, want %d and %s", s.Name, len(s.EtcdProxies), s.Process.Args, n, flag)
		}
	}
}

// stallAfter waits until every server's cache of configmaps holds rv,
// then stalls server i's etcd; it returns when, and the RV its cache
// stands at.
func stallAfter(ctx context.Context, t *testing.T, ha *testenv.HA, i int, rv uint64) (time.Time, uint64) {
	t.Helper()
	for _, s := range ha.Servers {
		if _, err := waitCacheRV(ctx, s, rv, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	s := ha.Servers[i]
	at := time.Now()
	s.StallEtcd()
	stuck, err := s.WatchCacheRV(ctx, "", "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stalled %s's etcd at its cache's RV %d (its /metrics answered in %v)", s.Name, stuck, since(at))
	return at, stuck
}

// writeAround writes 10 configmaps through writer and waits until every
// server's cache but the stalled one's holds them; it returns their last
// RV.
func writeAround(ctx context.Context, t *testing.T, ha *testenv.HA, writer kubernetes.Interface, stalled int, stallAt time.Time) uint64 {
	t.Helper()
	last := parseRV(t, write(ctx, t, writer, "during", 10))
	t.Logf("10 writes up to RV %d, %v after the stall", last, since(stallAt))
	for i, s := range ha.Servers {
		if i == stalled {
			continue
		}
		took, err := waitCacheRV(ctx, s, last, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s's cache reached the writes in %v", s.Name, took.Round(time.Millisecond))
	}
	return last
}

// checkStuck checks that s's cache of configmaps still stands at stuck.
func checkStuck(ctx context.Context, t *testing.T, s *controlplane.APIServer, stuck uint64, stallAt time.Time) {
	t.Helper()
	start := time.Now()
	now, err := s.WatchCacheRV(ctx, "", "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	if now != stuck {
		t.Errorf("%s's cache moved from %d to %d with its etcd stalled", s.Name, stuck, now)
	}
	t.Logf("%s's cache at RV %d, %v after the stall (its /metrics answered in %v)", s.Name, now, since(stallAt), since(start))
}

// release releases s's etcd and waits until its cache of configmaps
// holds last.
func release(ctx context.Context, t *testing.T, s *controlplane.APIServer, last uint64, stallAt time.Time) {
	t.Helper()
	releaseAt := time.Now()
	s.ReleaseEtcd()
	took, err := waitCacheRV(ctx, s, last, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("released after %v; %s's cache reached the writes in %v", releaseAt.Sub(stallAt).Round(time.Millisecond), s.Name, took.Round(time.Millisecond))
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// write writes n configmaps named prefix-<i> and returns the last RV.
func write(ctx context.Context, t *testing.T, c kubernetes.Interface, prefix string, n int) string {
	t.Helper()
	rv, err := testenv.WriteConfigMaps(ctx, c, metav1.NamespaceDefault, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func parseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pollFor is process.Poll bounded by timeout.
func pollFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return process.Poll(ctx, what, check)
}

// waitCacheRV waits until s's watch cache of configmaps reaches rv and
// says how long that took.
func waitCacheRV(ctx context.Context, s *controlplane.APIServer, rv uint64, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := pollFor(ctx, timeout, fmt.Sprintf("%s's cache of configmaps at RV %d", s.Name, rv), func(ctx context.Context) error {
		got, err := s.WatchCacheRV(ctx, "", "configmaps")
		if err == nil && got < rv {
			err = fmt.Errorf("at RV %d", got)
		}
		return err
	})
	return time.Since(start), err
}

// firstEvent opens a watch of configmaps from rv and says what it
// delivers first.
func firstEvent(c kubernetes.Interface, rv string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		w, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			return "", err
		}
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "closed", nil
			}
			return describe(ev), nil
		case <-ctx.Done():
			return "nothing", ctx.Err()
		}
	}
}

func describe(ev watch.Event) string {
	if m, err := meta(ev.Object); err == nil {
		return fmt.Sprintf("%s at RV %s", ev.Type, m.GetResourceVersion())
	}
	return fmt.Sprintf("%s %v", ev.Type, ev.Object)
}

func meta(o any) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", o)
	}
	return m, nil
}

// recorder keeps what one watch delivered.
type recorder struct {
	name   string
	start  time.Time
	mu     sync.Mutex
	events []string // "<type> at RV <rv> +<since start>"
	marks  []uint64 // the bookmarks' RVs
	max    uint64
	closed string
}

// startWatch opens a watch of configmaps from rv with bookmarks, as an
// informer's, which the server ends after timeout seconds, and records
// what it delivers.
func startWatch(ctx context.Context, t *testing.T, c kubernetes.Interface, rv uint64, timeout int64) *recorder {
	t.Helper()
	w, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r := &recorder{name: fmt.Sprintf("from RV %d opened at %s", rv, time.Now().Format("15:04:05")), start: time.Now()}
	go func() {
		for ev := range w.ResultChan() {
			r.mu.Lock()
			if m, err := meta(ev.Object); err == nil {
				v, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
				r.max = max(r.max, v)
				if ev.Type == watch.Bookmark {
					r.marks = append(r.marks, v)
				}
			}
			r.events = append(r.events, fmt.Sprintf("%s +%v", describe(ev), time.Since(r.start).Round(time.Second)))
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.closed = fmt.Sprintf("closed +%v", time.Since(r.start).Round(time.Second))
		r.mu.Unlock()
	}()
	return r
}

func (r *recorder) bookmarked(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.marks) > 0 {
		return nil
	}
	return fmt.Errorf("%d events, no bookmark %s", len(r.events), r.closed)
}

func (r *recorder) ended(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed != "" {
		return nil
	}
	return errors.New("open")
}

func (r *recorder) reached(rv uint64) func(context.Context) error {
	return func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.max >= rv {
			return nil
		}
		return fmt.Errorf("at RV %d %s", r.max, r.closed)
	}
}

func (r *recorder) maxRV() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max
}

func (r *recorder) lastBookmark() (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.marks) == 0 {
		return 0, false
	}
	return r.marks[len(r.marks)-1], true
}

func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d events %v %s", len(r.events), r.events, r.closed)
}
