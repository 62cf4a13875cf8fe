package sim

import (
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// History is one simulated run as data: the topology and the monitor's
// configuration, the workload and the faults. It prints as Go, so a
// failing random history becomes a regression case by pasting it.
type History struct {
	Seed     uint64
	Duration time.Duration
	Setup    Setup
	// Background is the rate of writes (per second) to resources nobody
	// watches, in the main etcd: the cluster's write rate as a watched
	// resource's informer does not see it.
	Background float64
	Loads      []Load
	Faults     []Fault
}

// Load writes to a watched resource at a steady rate: Poisson arrivals
// of creates, updates and deletes over Keys objects (one: a hot object).
type Load struct {
	Resource   string
	Start, End time.Duration
	Rate       float64
	Keys       int
}

// FaultKind names a fault.
type FaultKind string

// The faults the simulation injects.
const (
	// Freeze makes a connection half-open for Dur (Host); Reset breaks it at
	// the end instead of letting what waited through.
	Freeze FaultKind = "freeze"
	// Slow delays every response and event on a connection (Host) by Latency.
	Slow FaultKind = "slow"
	// SlowServer delays everything API server Server sends by Latency.
	SlowServer FaultKind = "slow-server"
	// Refuse answers the requests (not watches) of a connection (Host), for
	// one Resource or all, with HTTP status Code.
	Refuse FaultKind = "refuse"
	// Hang makes the requests (not watches) of a connection (Host), for one
	// Resource or all, hang.
	Hang FaultKind = "hang"
	// Restart takes API server Server down for Dur, then starts it with new
	// watch caches.
	Restart FaultKind = "restart"
	// Restore restores etcd Etcd from a backup Back revisions old; with
	// Reset, every API server restarts right after (as operators do).
	Restore FaultKind = "restore"
	// Stuck makes the watch cache of Resource on server Server stop
	// following etcd for Dur (it keeps sending bookmarks at its old RV).
	Stuck FaultKind = "stuck"
	// DeleteCRD deletes Resource for Dur, then creates it again.
	DeleteCRD FaultKind = "delete-crd"
	// Cutoff cuts API server Server off etcd for Dur (model.Tx.CutOff):
	// every watch cache of it stands still, sending bookmarks at its old
	// RV, and what needs etcd through it hangs (consistent lists, writes,
	// a watch with the RV unset, a watch-list) until the release, when
	// every cache catches up (-sim.widen=cutoff).
	Cutoff FaultKind = "cutoff"
)

// Fault is one fault of a history.
type Fault struct {
	Kind       FaultKind
	Start, Dur time.Duration
	Host       string
	Server     int
	Resource   string
	Etcd       string
	Latency    time.Duration
	Code       int
	Reset      bool
	Back       uint64
}

// End is when the fault's effect ends.
func (f Fault) End() time.Duration { return f.Start + f.Dur }

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Kind: %q, Start: %s, Dur: %s", f.Kind, goDuration(f.Start), goDuration(f.Dur))
	if f.Host != "" {
		fmt.Fprintf(&b, ", Host: %q", f.Host)
	}
	if f.Server != 0 {
		fmt.Fprintf(&b, ", Server: %d", f.Server)
	}
	if f.Resource != "" {
		fmt.Fprintf(&b, ", Resource: %q", f.Resource)
	}
	if f.Etcd != "" {
		fmt.Fprintf(&b, ", Etcd: %q", f.Etcd)
	}
	if f.Latency != 0 {
		fmt.Fprintf(&b, ", Latency: %s", goDuration(f.Latency))
	}
	if f.Code != 0 {
		fmt.Fprintf(&b, ", Code: %d", f.Code)
	}
	if f.Reset {
		b.WriteString(", Reset: true")
	}
	if f.Back != 0 {
		fmt.Fprintf(&b, ", Back: %d", f.Back)
	}
	b.WriteString("}")
	return b.String()
}

// goDuration renders d as Go source.
func goDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d * time.Minute", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%d * time.Second", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%d * time.Millisecond", d/time.Millisecond)
	}
	return fmt.Sprintf("time.Duration(%d)", int64(d))
}

// script schedules h's workload and faults on w's cluster.
func (h *History) script(w *World) {
	c := w.Cluster
	rng := randv2.New(randv2.NewPCG(h.Seed, 0x5eed))
	at := func(d time.Duration) time.Time { return w.Start.Add(d) }
	// background writes, one batch a second
	if h.Background > 0 {
		for s := time.Second; s < h.Duration; s += time.Second {
			n := uint64(h.Background)
			if rng.Float64() < h.Background-math.Floor(h.Background) {
				n++
			}
			c.At(at(s+time.Duration(rng.Int64N(int64(time.Second)))), func(tx *model.Tx) {
				if tx.Serving() { // writers write through an API server
					tx.Others(model.MainEtcd, n)
				}
			})
		}
	}
	for _, l := range h.Loads {
		keys := max(1, l.Keys)
		for t := l.Start; l.Rate > 0; {
			t += time.Duration(rng.ExpFloat64() / l.Rate * float64(time.Second))
			if t >= l.End || t >= h.Duration {
				break
			}
			k := rng.IntN(keys)
			op := rng.Float64()
			ns := ""
			if w.watched(l.Resource).Namespaced {
				ns = LoadNamespace
			}
			c.At(at(t), func(tx *model.Tx) {
				name := fmt.Sprintf("obj-%d", k)
				switch {
				case !tx.Serving():
				case tx.Get(l.Resource, ns, name) == nil:
					tx.Create(l.Resource, ns, name, nil)
				case op < 0.1 && keys > 1:
					tx.Delete(l.Resource, ns, name)
				default:
					tx.Update(l.Resource, ns, name, func(o *model.Object) { o.Generation++ })
				}
			})
		}
	}
	for _, f := range h.Faults {
		h.apply(w, f, at)
	}
}

func (h *History) apply(w *World, f Fault, at func(time.Duration) time.Time) {
	c := w.Cluster
	start, end := at(f.Start), at(f.End())
	switch f.Kind {
	case Freeze:
		c.At(start, func(tx *model.Tx) { tx.Freeze(f.Host, true, false) })
		c.At(end, func(tx *model.Tx) { tx.Freeze(f.Host, false, f.Reset) })
	case Slow:
		c.At(start, func(tx *model.Tx) { tx.SetConnLatency(f.Host, f.Latency) })
		c.At(end, func(tx *model.Tx) { tx.SetConnLatency(f.Host, 0) })
	case SlowServer:
		c.At(start, func(tx *model.Tx) { tx.SetServerLatency(f.Server, f.Latency) })
		c.At(end, func(tx *model.Tx) { tx.SetServerLatency(f.Server, 0) })
	case Refuse:
		c.At(start, func(tx *model.Tx) { tx.Refuse(f.Host, f.Resource, f.Code) })
		c.At(end, func(tx *model.Tx) { tx.Refuse(f.Host, "", 0) })
	case Hang:
		c.At(start, func(tx *model.Tx) { tx.Hang(f.Host, f.Resource, true) })
		c.At(end, func(tx *model.Tx) { tx.Hang(f.Host, "", false) })
	case Restart:
		c.At(start, func(tx *model.Tx) { tx.Stop(f.Server) })
		c.At(end, func(tx *model.Tx) { tx.Start(f.Server) })
	case Restore:
		etcd := f.Etcd
		if etcd == "" {
			etcd = model.MainEtcd
		}
		c.At(start, func(tx *model.Tx) {
			rev := tx.Revision(etcd)
			tx.Restore(etcd, rev-min(f.Back, rev-1))
			if f.Reset {
				for i := range tx.Cluster().Servers() {
					tx.Stop(i)
				}
			}
		})
		if f.Reset {
			c.At(end, func(tx *model.Tx) {
				for i := range tx.Cluster().Servers() {
					tx.Start(i)
				}
			})
		}
	case Stuck:
		c.At(start, func(tx *model.Tx) { tx.StickCache(f.Server, f.Resource, true) })
		c.At(end, func(tx *model.Tx) { tx.StickCache(f.Server, f.Resource, false) })
	case Cutoff:
		c.At(start, func(tx *model.Tx) { tx.CutOff(f.Server, true) })
		c.At(end, func(tx *model.Tx) { tx.CutOff(f.Server, false) })
	case DeleteCRD:
		r, _ := h.watched(f.Resource)
		c.At(start, func(tx *model.Tx) { tx.DeleteResource(f.Resource) })
		c.At(end, func(tx *model.Tx) { tx.AddResource(r.ResourceSpec) })
	}
}

// RunHistory runs h in a synctest bubble of t and checks every scrape
// against the truth.
//
// It seeds math/rand's global source with h.Seed first: client-go and
// the monitor draw their jitter from it, so a history's every draw
// replays (in a test binary built with //go:debug randseednop=0, as this
// package's is; histories run one at a time per process). Which of two
// goroutines woken at one simulated instant runs first does not: Go's
// scheduler picks (TestSeed's -sim.runs).
func RunHistory(t *testing.T, h History) (*Checker, error) {
	return runHistory(t, h, nil)
}

// runHistory is RunHistory that also hands every scrape to each.
func runHistory(t *testing.T, h History, each func(Scrape)) (*Checker, error) {
	//lint:ignore SA1019 the only way to seed what client-go reads
	rand.Seed(int64(h.Seed))
	var chk *Checker
	err := Run(t, h.Setup, h.Seed, h.Duration, func(w *World) {
		chk = NewChecker(&h, w.Start)
		h.script(w)
	}, func(s Scrape) {
		chk.Check(s)
		if each != nil {
			each(s)
		}
	})
	return chk, err
}
