package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// Target is a control plane a script runs against: the model or the real
// kube-apiserver and etcd.
type Target interface {
	// Config is an admin client configuration.
	Config() *rest.Config
	// Namespace makes the namespace exist (the model has no namespaces).
	Namespace(ctx context.Context, name string) error
	// Restart restarts the API server on the same etcd and returns once it
	// serves.
	Restart(ctx context.Context) error
	// Snapshot takes a copy of etcd's data.
	Snapshot(ctx context.Context) error
	// Restore restores etcd from the snapshot, with the API server
	// restarted on it or left running, and returns once it serves.
	Restore(ctx context.Context, restart bool) error
	// Freeze stalls the client's connections (Config's), present and
	// future, or (frozen false) ends the stall.
	Freeze(ctx context.Context, frozen bool) error
}

// seqAnnotation carries the label of the script's write that made an
// object's version (w1, w2, ...).
const seqAnnotation = "conformance.rvsync.io/write"

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// runner runs one script and records what its client observes.
type runner struct {
	target Target
	ns     string
	meta   metadata.ResourceInterface
	dyn    dynamic.ResourceInterface
	fill   dynamic.ResourceInterface

	mu         sync.Mutex
	step       int
	stepStarts []time.Time
	raws       []raw
	writes     []write
	marks      map[string]string
	watches    map[string]*watchRun
	wg         sync.WaitGroup
	fills      int
}

// write is one of the script's writes.
type write struct {
	label  string
	issued time.Time
	rv     uint64 // 0: unknown (a delete answers with no revision of its own)
}

type watchRun struct {
	cancel  context.CancelFunc
	iface   watch.Interface
	stopped bool
	opened  time.Time
}

// stop ends the watch from the client's side; r.mu is held.
func (w *watchRun) stop() {
	w.stopped = true
	w.cancel()
	if w.iface != nil {
		w.iface.Stop()
	}
}

// raw is one thing the client observed, before its resource versions are
// named after the script's writes.
type raw struct {
	stream string // the watch, "" for requests
	step   int
	at     time.Time
	opened time.Time // of its watch
	kind   string    // write, list, event, bookmark, error, closed
	typ    string    // event type, write op
	name   string
	seq    string // the write an object shows
	rv     string
	items  []item
	detail string
}

type item struct{ name, seq, rv string }

// Record is what a client observed during a script, its resource versions
// named after the script's writes.
type Record struct {
	Script       Script
	Observations []Observation
	// StepAt is when each step began, after the first.
	StepAt []time.Duration
	// Fills counts the Fill writes (revisions no watch of the script sees).
	Fills int
}

// Run runs script against target in namespace ns and returns what its
// client observed. Everything it opened is closed when it returns.
func Run(ctx context.Context, target Target, script Script, ns string) (*Record, error) {
	cfg := rest.CopyConfig(target.Config())
	cfg.QPS, cfg.Burst = -1, 0
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	fillNS := ns + "-fill"
	for _, n := range []string{ns, fillNS} {
		if err := target.Namespace(ctx, n); err != nil {
			return nil, err
		}
	}
	r := &runner{
		target: target, ns: ns,
		meta: mc.Resource(configMaps).Namespace(ns), dyn: dc.Resource(configMaps).Namespace(ns), fill: dc.Resource(configMaps).Namespace(fillNS),
		marks: map[string]string{}, watches: map[string]*watchRun{},
	}
	defer func() {
		r.mu.Lock()
		for _, w := range r.watches {
			w.stop()
		}
		r.mu.Unlock()
		r.wg.Wait()
	}()
	for i, s := range script.Steps {
		r.mu.Lock()
		r.step = i
		r.stepStarts = append(r.stepStarts, time.Now())
		r.mu.Unlock()
		if err := r.do(ctx, s); err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", i, s, err)
		}
	}
	r.mu.Lock()
	for _, w := range r.watches {
		w.stop()
	}
	r.mu.Unlock()
	r.wg.Wait()
	rec := &Record{Script: script, Observations: r.normalize(), Fills: r.fills}
	for _, at := range r.stepStarts {
		rec.StepAt = append(rec.StepAt, at.Sub(r.stepStarts[0]))
	}
	return rec, nil
}

func (r *runner) record(o raw) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.step, o.at = r.step, time.Now()
	r.raws = append(r.raws, o)
}

// rv resolves a step's resourceVersion: "" and "0" as they are, a mark to
// the version it names.
func (r *runner) rv(from string) (string, error) {
	if from == "" || from == "0" {
		return from, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.marks[from]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no mark %q", from)
}

func (r *runner) do(ctx context.Context, s Step) error {
	switch s.Op {
	case Create, Update, Delete:
		r.write(ctx, s)
	case Fill:
		return r.fillWrites(ctx, s.From, s.Count)
	case Idle:
		if s.Name == "" {
			time.Sleep(s.Dur)
			break
		}
		r.mu.Lock()
		w := r.watches[s.Name]
		r.mu.Unlock()
		if w == nil {
			return fmt.Errorf("idle: no watch %s", s.Name)
		}
		time.Sleep(time.Until(w.opened.Add(s.Dur)))
	case Watch:
		return r.watch(ctx, s)
	case Stop:
		r.mu.Lock()
		if w := r.watches[s.Name]; w != nil {
			w.stop()
		}
		r.mu.Unlock()
	case List:
		return r.list(ctx, s)
	case Restart:
		return r.target.Restart(ctx)
	case Snapshot:
		return r.target.Snapshot(ctx)
	case Restore:
		return r.target.Restore(ctx, s.Restart)
	case Freeze, Thaw:
		return r.target.Freeze(ctx, s.Op == Freeze)
	default:
		return fmt.Errorf("unknown op %q", s.Op)
	}
	return nil
}

// write makes the script's next write; a refused one is observed too.
func (r *runner) write(ctx context.Context, s Step) {
	r.mu.Lock()
	label := "w" + strconv.Itoa(len(r.writes)+1)
	r.writes = append(r.writes, write{label: label, issued: time.Now()})
	idx := len(r.writes) - 1
	r.mu.Unlock()
	var out *unstructured.Unstructured
	var err error
	switch s.Op {
	case Create:
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"name": s.Name, "annotations": map[string]any{seqAnnotation: label},
				"labels": map[string]any{model.ShardLabel: model.Shard(r.ns + "/" + s.Name)},
			},
		}}
		out, err = r.dyn.Create(ctx, obj, metav1.CreateOptions{})
	case Update:
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, seqAnnotation, label)
		out, err = r.dyn.Patch(ctx, s.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case Delete:
		err = r.dyn.Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	o := raw{kind: "write", typ: string(s.Op), name: s.Name, seq: label}
	if err != nil {
		o.detail = errText(err)
	} else if out != nil {
		o.rv = out.GetResourceVersion()
		rv, _ := strconv.ParseUint(o.rv, 10, 64)
		r.mu.Lock()
		r.writes[idx].rv = rv
		r.marks[label] = o.rv
		r.mu.Unlock()
	}
	r.record(o)
}

// fillWrites writes in the fill namespace until a write lands above the
// revision the mark from names, then n more; or n times.
func (r *runner) fillWrites(ctx context.Context, from string, n int) error {
	target := uint64(0)
	if from != "" {
		v, err := r.rv(from)
		if err != nil {
			return err
		}
		if target, err = strconv.ParseUint(v, 10, 64); err != nil {
			return err
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fill"},
	}}
	if _, err := r.fill.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	passed := from == ""
	for i := 0; i < 10_000; i++ {
		if passed && n <= 0 {
			return nil
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"fill":"%d"}}}`, i)
		out, err := r.fill.Patch(ctx, "fill", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		r.fills++
		if !passed {
			rv, _ := strconv.ParseUint(out.GetResourceVersion(), 10, 64)
			passed = rv > target
			continue
		}
		n--
	}
	return fmt.Errorf("etcd's revision did not pass %d", target)
}

// listTimeout bounds a List, far above what the real control plane takes
// (about 40s for a revision a restore lost, 36s for one hung on a frozen
// connection): a List a control plane leaves hanging is observed as
// failed instead of hanging the script.
const listTimeout = 2 * time.Minute

func (r *runner) list(ctx context.Context, s Step) error {
	rv, err := r.rv(s.From)
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: s.Limit, LabelSelector: s.Selector, FieldSelector: s.Field}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	for first := true; ; first = false {
		l, err := r.meta.List(ctx, opts)
		if err != nil {
			r.record(raw{kind: "list", detail: errText(err)})
			return nil
		}
		o := raw{kind: "list", rv: l.ResourceVersion}
		for _, it := range l.Items {
			o.items = append(o.items, item{name: it.Name, seq: it.Annotations[seqAnnotation], rv: it.ResourceVersion})
		}
		if l.Continue != "" {
			o.detail = "continue"
			if l.RemainingItemCount != nil {
				o.detail += fmt.Sprintf(" remaining=%d", *l.RemainingItemCount)
			}
		}
		r.record(o)
		if first && s.Mark != "" {
			r.mu.Lock()
			r.marks[s.Mark] = l.ResourceVersion
			r.mu.Unlock()
		}
		if l.Continue == "" {
			return nil
		}
		opts = metav1.ListOptions{Limit: s.Limit, Continue: l.Continue, LabelSelector: s.Selector, FieldSelector: s.Field}
	}
}

// watch opens a watch and observes it until it ends or is stopped.
func (r *runner) watch(ctx context.Context, s Step) error {
	rv, err := r.rv(s.From)
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: s.Bookmarks, LabelSelector: s.Selector, FieldSelector: s.Field}
	if s.Timeout > 0 {
		opts.TimeoutSeconds = &s.Timeout
	}
	if s.Initial {
		initial := true
		opts.SendInitialEvents = &initial
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	wctx, cancel := context.WithCancel(ctx)
	opened := time.Now()
	w := &watchRun{cancel: cancel, opened: opened}
	r.mu.Lock()
	if old := r.watches[s.Name]; old != nil {
		r.mu.Unlock()
		cancel()
		return fmt.Errorf("watch %s is open", s.Name)
	}
	r.watches[s.Name] = w
	r.mu.Unlock()
	stopped := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return w.stopped
	}
	r.wg.Go(func() {
		defer cancel()
		wi, err := r.meta.Watch(wctx, opts)
		if err != nil {
			if !stopped() {
				r.record(raw{stream: s.Name, opened: opened, kind: "error", detail: errText(err)})
			}
			return
		}
		r.mu.Lock()
		w.iface = wi
		if w.stopped {
			wi.Stop()
		}
		r.mu.Unlock()
		for ev := range wi.ResultChan() {
			o := raw{stream: s.Name, opened: opened, kind: "event", typ: string(ev.Type)}
			switch obj := ev.Object.(type) {
			case *metav1.Status:
				o.kind, o.detail = "error", statusText(obj)
			case *metav1.PartialObjectMetadata:
				o.name, o.seq, o.rv = obj.Name, obj.Annotations[seqAnnotation], obj.ResourceVersion
				if ev.Type == watch.Bookmark {
					o.kind = "bookmark"
					if obj.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
						o.detail = "initial-events-end"
					}
				}
			default:
				o.kind, o.detail = "error", fmt.Sprintf("unexpected %T", ev.Object)
			}
			if stopped() {
				return
			}
			r.record(o)
		}
		if !stopped() {
			r.record(raw{stream: s.Name, opened: opened, kind: "closed"})
		}
	})
	return nil
}

func errText(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return statusText(&s)
	}
	// a transport's error, without the request's URL (the two control
	// planes' hosts differ)
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "error"
}

func statusText(s *metav1.Status) string {
	t := fmt.Sprintf("%d %s", s.Code, s.Reason)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			t += " " + string(c.Type)
		}
	}
	return t
}
