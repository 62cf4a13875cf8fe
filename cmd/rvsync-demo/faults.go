package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/faultproxy"
)

// The faults the demo can inject.
const (
	// faultStall holds every byte between the informers and kube-apiserver
	// (the half-open connection of a stuck watch); the head probe and the
	// canary go direct, so they see it.
	faultStall = "stall"
	// faultSlow delays every byte between the informers and kube-apiserver,
	// as an overloaded API server or a congested network does.
	faultSlow = "slow"
	// faultRestart restarts kube-apiserver on the same etcd while the
	// workload writes on: the informers reconnect, most by a relist.
	faultRestart = "restart"
)

// defaultSlowDelay is the delay of the slow fault without =DELAY.
const defaultSlowDelay = 3 * time.Second

// faultSpec is one --fault: kind, when, for how long.
type faultSpec struct {
	kind  string
	delay time.Duration // slow only
	// after is when the fault begins, counted from the moment every
	// informer has synced.
	after time.Duration
	// length is how long a stall or slow lasts; 0: to the end of the run.
	length time.Duration
	// untilPage ends the fault when a page arrives.
	untilPage bool
}

const faultSyntax = "want KIND[=DELAY]@AFTER[+FOR|+page] with KIND stall, slow or restart, e.g. stall@30s+page, slow=2s@1m+2m, restart@5m"

// parseFault parses a --fault value: KIND[=DELAY]@AFTER[+FOR|+page].
func parseFault(s string) (faultSpec, error) {
	bad := func(format string, a ...any) (faultSpec, error) {
		return faultSpec{}, fmt.Errorf("%s; %s", fmt.Sprintf(format, a...), faultSyntax) // the flag package names the flag and value
	}
	what, when, ok := strings.Cut(s, "@")
	if !ok {
		return bad("no @AFTER")
	}
	kind, delay, hasDelay := strings.Cut(what, "=")
	f := faultSpec{kind: kind}
	switch kind {
	case faultStall, faultRestart:
		if hasDelay {
			return bad("only slow takes =DELAY")
		}
	case faultSlow:
		f.delay = defaultSlowDelay
		if hasDelay {
			d, err := time.ParseDuration(delay)
			if err != nil || d <= 0 {
				return bad("delay %q is not a positive duration", delay)
			}
			f.delay = d
		}
	default:
		return bad("unknown fault %q", kind)
	}
	after, length, hasLength := strings.Cut(when, "+")
	d, err := time.ParseDuration(after)
	if err != nil || d < 0 {
		return bad("start %q is not a duration", after)
	}
	f.after = d
	if !hasLength {
		return f, nil
	}
	if kind == faultRestart {
		return bad("a restart has no length")
	}
	if length == "page" {
		f.untilPage = true
		return f, nil
	}
	if f.length, err = time.ParseDuration(length); err != nil || f.length <= 0 {
		return bad("length %q is neither a positive duration nor page", length)
	}
	return f, nil
}

// faultFlags collects repeated --fault flags.
type faultFlags []faultSpec

func (f *faultFlags) String() string { return "" }

func (f *faultFlags) Set(s string) error {
	spec, err := parseFault(s)
	if err != nil {
		return err
	}
	*f = append(*f, spec)
	return nil
}

// episode is one fault as it happened.
type episode struct {
	kind       string
	what       string // what was done, for the event log
	start, end time.Time
}

// injector injects and ends faults and remembers when, so pages can be
// timed from the fault that caused them.
type injector struct {
	proxy *faultproxy.Proxy       // between the informers and kube-apiserver
	procs *controlplane.Processes // the control plane's processes, for the restart
	log   func(string, ...any)    // the event log
	pages func() <-chan struct{}  // closed at the next page

	mu       sync.Mutex
	episodes []*episode
	active   map[string]*episode // stall and slow while they last; restart while it runs
}

func newInjector(proxy *faultproxy.Proxy, procs *controlplane.Processes, log func(string, ...any), pages func() <-chan struct{}) *injector {
	return &injector{proxy: proxy, procs: procs, log: log, pages: pages, active: map[string]*episode{}}
}

// begin records the start of a fault of kind unless one is active.
func (i *injector) begin(kind, what string) (*episode, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, on := i.active[kind]; on {
		return nil, false
	}
	e := &episode{kind: kind, what: what, start: time.Now()}
	i.episodes = append(i.episodes, e)
	i.active[kind] = e
	return e, true
}

// finish records the end of the active fault of kind, if any.
func (i *injector) finish(kind string) (*episode, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	e, on := i.active[kind]
	if !on {
		return nil, false
	}
	e.end = time.Now()
	delete(i.active, kind)
	return e, true
}

// activeKinds lists the faults active now, with their start.
func (i *injector) activeKinds() map[string]time.Time {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := map[string]time.Time{}
	for k, e := range i.active {
		out[k] = e.start
	}
	return out
}

// latest returns the latest fault that began before t.
func (i *injector) latest(t time.Time) (episode, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for j := len(i.episodes) - 1; j >= 0; j-- {
		if !i.episodes[j].start.After(t) {
			return *i.episodes[j], true
		}
	}
	return episode{}, false
}

// stall holds the informers' connection.
func (i *injector) stall() {
	if _, ok := i.begin(faultStall, "the proxy holds every byte between the informers and kube-apiserver; the head probe and the canary go direct"); ok {
		i.proxy.Stall()
		i.log("fault: stall — the proxy holds every byte between the informers and kube-apiserver (the head probe and the canary go direct)")
	}
}

// slow delays the informers' connection by d.
func (i *injector) slow(d time.Duration) {
	if _, ok := i.begin(faultSlow, fmt.Sprintf("every byte between the informers and kube-apiserver %v late", d)); ok {
		i.proxy.SetDelay(d)
		i.log("fault: slow — every byte between the informers and kube-apiserver arrives %v late", d)
	}
}

// end ends a stall or a slow.
func (i *injector) end(kind string) {
	e, ok := i.finish(kind)
	if !ok {
		return
	}
	switch kind {
	case faultStall:
		i.proxy.Release()
	case faultSlow:
		i.proxy.SetDelay(0)
	}
	i.log("fault ended: %s, after %s", kind, round(e.end.Sub(e.start)))
}

// toggle starts a stall or slow, or ends it when it is on.
func (i *injector) toggle(kind string, delay time.Duration) {
	if _, on := i.activeKinds()[kind]; on {
		i.end(kind)
		return
	}
	if kind == faultStall {
		i.stall()
	} else {
		i.slow(delay)
	}
}

// restart restarts kube-apiserver and waits until it is ready again.
func (i *injector) restart(ctx context.Context) {
	if _, ok := i.begin(faultRestart, "kube-apiserver stopped and started again on the same etcd"); !ok {
		return
	}
	i.log("fault: restart — kube-apiserver stops (SIGTERM) and starts again on the same etcd while the workload writes on")
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err := i.procs.RestartAPIServer(ctx)
	e, _ := i.finish(faultRestart)
	if err != nil {
		i.log("restart: %v", err)
		return
	}
	i.log("kube-apiserver is back, %s after it stopped", round(e.end.Sub(e.start)))
}

// run injects f at its time (counted from synced) until ctx ends.
func (i *injector) run(ctx context.Context, synced time.Time, f faultSpec) {
	if !sleepUntil(ctx, synced.Add(f.after)) {
		return
	}
	switch f.kind {
	case faultRestart:
		i.restart(ctx)
		return
	case faultStall:
		i.stall()
	case faultSlow:
		i.slow(f.delay)
	}
	switch {
	case f.untilPage:
		select {
		case <-ctx.Done():
			return
		case <-i.pages():
		}
	case f.length > 0:
		if !sleepUntil(ctx, time.Now().Add(f.length)) {
			return
		}
	default:
		return // to the end of the run
	}
	i.end(f.kind)
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// round rounds a duration for people: to the second, to 0.1s below 10s.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
