package conformance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Observation is one thing a client observed, in a form both control
// planes can be compared by: resource versions named after the script's
// writes, times relative to the step (and the watch) they came in.
type Observation struct {
	// Stream is the watch it came on ("" for the answer to a request).
	Stream string
	// Step is the index of the step during which it came; After, how long
	// after that step began; SinceOpen, how long after its watch was
	// opened.
	Step             int
	After, SinceOpen time.Duration
	// Kind is write, list, event, bookmark, error or closed.
	Kind string
	// RV is the resource version as served, for reading a record (never
	// compared: the two control planes number their revisions apart).
	RV string
	// Text is what was observed. A resource version reads as the write
	// that made it (w3), or as the newest write below it followed by a
	// "+" (w3+: revisions the script did not write, such as the API
	// server's own lease renewals, lie between).
	Text string
}

func (o Observation) String() string {
	at := fmt.Sprintf("step %2d +%5.1fs", o.Step, o.After.Seconds())
	if o.Stream != "" {
		at += fmt.Sprintf(" %-9s (%5.1fs)", o.Stream, o.SinceOpen.Seconds())
	} else {
		at += fmt.Sprintf(" %-9s         ", "")
	}
	at += " " + o.Text
	if o.RV != "" {
		at += "  (rv " + o.RV + ")"
	}
	return at
}

// normalize names the resource versions of what was observed after the
// script's writes.
func (r *runner) normalize() []Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Observation, 0, len(r.raws))
	for _, o := range r.raws {
		n := Observation{Stream: o.stream, Step: o.step, Kind: o.kind, RV: o.rv}
		if o.stream != "" {
			n.SinceOpen = o.at.Sub(o.opened)
		}
		n.After = o.at.Sub(r.stepStart(o))
		switch o.kind {
		case "write":
			n.Text = fmt.Sprintf("%s %s %s", strings.ToUpper(o.typ), o.name, o.seq)
			if o.detail != "" {
				n.Text += ": " + o.detail
			}
		case "list":
			if o.detail != "" && o.rv == "" {
				n.Text = "LIST: " + o.detail
				break
			}
			var items []string
			for _, it := range o.items {
				items = append(items, it.name+"@"+r.version(it.seq, it.rv, o.at))
			}
			n.Text = fmt.Sprintf("LIST rv=%s [%s]", r.class(o.rv, o.at), strings.Join(items, " "))
			if o.detail != "" {
				n.Text += " " + o.detail
			}
		case "event":
			n.Text = fmt.Sprintf("%s %s@%s", o.typ, o.name, r.version(o.seq, o.rv, o.at))
			if o.typ == "DELETED" {
				n.Text += " rv=" + r.class(o.rv, o.at)
			}
		case "bookmark":
			n.Text = "BOOKMARK rv=" + r.class(o.rv, o.at)
			if o.detail != "" {
				n.Text += " " + o.detail
			}
		case "error":
			n.Text = "ERROR " + o.detail
		case "closed":
			n.Text = "CLOSED"
		}
		out = append(out, n)
	}
	return out
}

// stepStart is when the step of o began.
func (r *runner) stepStart(o raw) time.Time { return r.stepStarts[o.step] }

// version names the version of an object: the write its annotation names,
// followed by its resource version's name when that is not the write's
// own (a delete's event, or a revision that does not match).
func (r *runner) version(seq, rv string, at time.Time) string {
	if seq == "" {
		return "rv=" + r.class(rv, at)
	}
	for _, w := range r.writes {
		if w.label == seq && w.rv != 0 && strconv.FormatUint(w.rv, 10) == rv {
			return seq
		}
	}
	return seq + "(rv=" + r.class(rv, at) + ")"
}

// class names a resource version observed at at after the script's writes
// issued by then: the latest of them with that revision (after a restore a
// revision may name a lost write and a new one), or else the newest below
// it, with a "+".
func (r *runner) class(s string, at time.Time) string {
	if s == "" {
		return `""`
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return "opaque"
	}
	exact, below := -1, -1
	for i, w := range r.writes { // in the order they were issued
		switch {
		case w.rv == 0 || w.issued.After(at):
		case w.rv == v:
			exact = i
		case w.rv < v && (below < 0 || w.rv >= r.writes[below].rv):
			below = i
		}
	}
	switch {
	case exact >= 0:
		return r.writes[exact].label
	case below >= 0:
		return r.writes[below].label + "+"
	}
	return "before-w1"
}

// Tolerances of the comparison (see the package documentation).
const (
	// EventTolerance is how far apart in time the two control planes may
	// deliver the same event, an answer to a request, or an error, within
	// its step.
	EventTolerance = 1500 * time.Millisecond
	// BookmarkTolerance is how far apart the same bookmark or the end of a
	// watch may come, after the watch opened: the cacher dispatches
	// bookmarks on a ticker of 1s ± 25%, and the script's steps take time
	// on the real server that they do not in the model.
	BookmarkTolerance = 3 * time.Second
)

// Difference is one way two records differ.
type Difference struct {
	Stream string
	Model  *Observation
	Real   *Observation
	Why    string
}

func (d Difference) String() string {
	show := func(o *Observation) string {
		if o == nil {
			return "(nothing)"
		}
		return o.String()
	}
	return fmt.Sprintf("%s:\n\tmodel: %s\n\treal:  %s", d.Why, show(d.Model), show(d.Real))
}

// Compare returns how what the client observed of the model differs from
// what it observed of the real control plane: per stream (each watch, and
// the answers to requests), the same observations in the same order, in the
// same step, within the tolerances. A resource version that differs only
// in its "+" (revisions nobody scripted between it and the script's write
// below it) is tolerated in a bookmark or a list, where the real server's
// own lease writes may or may not have landed.
func Compare(model, real *Record) []Difference {
	streams := func(r *Record) map[string][]Observation {
		m := map[string][]Observation{}
		ended := map[string]time.Duration{} // when each watch-list's initial events ended
		for _, o := range r.Observations {
			if s := m[o.Stream]; len(s) > 0 && repeated(s[len(s)-1], o) {
				continue
			}
			if end, ok := ended[o.Stream]; ok && echo(end, o) {
				continue
			}
			if o.Kind == "bookmark" && strings.HasSuffix(o.Text, initialEventsEnd) {
				ended[o.Stream] = o.SinceOpen
			}
			m[o.Stream] = append(m[o.Stream], o)
		}
		return m
	}
	ms, rs := streams(model), streams(real)
	var names []string
	for n := range ms {
		names = append(names, n)
	}
	for n := range rs {
		if _, ok := ms[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var diffs []Difference
	for _, n := range names {
		m, r := ms[n], rs[n]
		for i := range max(len(m), len(r)) {
			var mo, ro *Observation
			if i < len(m) {
				mo = &m[i]
			}
			if i < len(r) {
				ro = &r[i]
			}
			if why := differ(model, real, mo, ro); why != "" {
				diffs = append(diffs, Difference{Stream: n, Model: mo, Real: ro, Why: why})
				break // the rest of the stream is out of step
			}
		}
	}
	return diffs
}

// repeated reports whether bookmark o repeats the one before it within
// the cacher's dispatch tick: kube-apiserver files each watcher's next
// bookmark in a bucket of one second and sends it at the first tick in
// that second, so a bookmark due 2s before the watch's timeout can go out
// up to a second early and, still due, once more at the next tick (seen:
// at 67.95s and 69.14s for a 70s watch). A client learns nothing from the
// repeat; the comparison skips it.
func repeated(prev, o Observation) bool {
	return o.Kind == "bookmark" && prev.Kind == "bookmark" && prev.Text == o.Text && o.SinceOpen-prev.SinceOpen <= 1250*time.Millisecond
}

// initialEventsEnd ends the text of a watch-list's initial-events-end
// bookmark.
const initialEventsEnd = " initial-events-end"

// echo reports whether bookmark o echoes the initial-events-end bookmark
// of its watch-list, which came at end: until the watcher confirms that
// bookmark, the cacher schedules the next one at once, so when its
// dispatch tick comes first, one more bookmark goes out at the next tick
// (about a second later, after the events between; seen once in five
// runs: the initial-events-end bookmark, a write's event at 1.0s, a
// bookmark of that write's RV at 1.1s). A client learns nothing from it
// that the event did not tell; the comparison skips it.
func echo(end time.Duration, o Observation) bool {
	return o.Kind == "bookmark" && !strings.HasSuffix(o.Text, initialEventsEnd) && o.SinceOpen > end && o.SinceOpen-end <= 1250*time.Millisecond
}

// controlPlane reports whether step i of the script restarts or restores
// the control plane: a step the model takes at once and the real one in
// seconds, at a moment of its own (a stopped kube-apiserver ends its
// watches when it exits, up to its grace period later).
func controlPlane(script Script, i int) bool {
	if i < 0 || i >= len(script.Steps) {
		return false
	}
	op := script.Steps[i].Op
	return op == Restart || op == Restore
}

// place returns the step o counts in: its own, or the control-plane step
// before it when it came at the start of the next step (the model's
// control-plane steps take no time; what they cause is observed once the
// script goes on).
func place(r *Record, o *Observation) (step int, during bool) {
	if controlPlane(r.Script, o.Step) {
		return o.Step, true
	}
	if controlPlane(r.Script, o.Step-1) && o.After < EventTolerance {
		return o.Step - 1, true
	}
	return o.Step, false
}

// between reports whether a control-plane step lies between steps a and
// b (exclusive): times do not compare across one.
func between(script Script, a, b int) bool {
	for i := min(a, b) + 1; i < max(a, b); i++ {
		if controlPlane(script, i) {
			return true
		}
	}
	return false
}

// since returns when o came, after step s began.
func since(r *Record, o *Observation, s int) time.Duration {
	if o.Step >= len(r.StepAt) || s >= len(r.StepAt) {
		return o.After
	}
	return r.StepAt[o.Step] + o.After - r.StepAt[s]
}

// differ says how two observations at the same place of a stream differ
// ("" when they agree within the tolerances).
func differ(model, real *Record, m, r *Observation) string {
	switch {
	case m == nil:
		return "only the real server"
	case r == nil:
		return "only the model"
	case m.Text != r.Text && !(m.Kind == r.Kind && (m.Kind == "bookmark" || m.Kind == "list") && strings.ReplaceAll(m.Text, "+", "") == strings.ReplaceAll(r.Text, "+", "")):
		return "different"
	}
	ms, mDuring := place(model, m)
	rs, rDuring := place(real, r)
	switch {
	case mDuring || rDuring:
		if ms != rs {
			return "in another step (around a restart or restore)"
		}
	case m.Kind == "bookmark" || m.Kind == "closed":
		if d := m.SinceOpen - r.SinceOpen; d > BookmarkTolerance || d < -BookmarkTolerance {
			return fmt.Sprintf("%v apart after the watch opened (tolerance %v)", d.Round(10*time.Millisecond), BookmarkTolerance)
		}
	case m.Kind == "write" || m.Kind == "list":
		if ms != rs {
			return "in another step"
		}
		// how long the request took (a retried one, seconds)
		tol := max(EventTolerance, r.After/10)
		if d := m.After - r.After; d > tol || d < -tol {
			return fmt.Sprintf("answered %v apart (tolerance %v)", d.Round(10*time.Millisecond), tol)
		}
	default:
		if between(model.Script, ms, rs) || between(real.Script, ms, rs) {
			return "in another step (a restart or restore between)"
		}
		later := max(ms, rs)
		if d := since(model, m, later) - since(real, r, later); d > EventTolerance || d < -EventTolerance {
			return fmt.Sprintf("%v apart (tolerance %v)", d.Round(10*time.Millisecond), EventTolerance)
		}
	}
	return ""
}
