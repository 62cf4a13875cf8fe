package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// Receivers of the demo's Alertmanager: pages and tickets as
// docs/alertmanager.yaml routes them, and anything else. All three are the
// demo's own webhook, which prints each notification as it arrives.
const (
	receiverPage   = "page"
	receiverTicket = "ticket"
	receiverOther  = "other"
)

// notification is an Alertmanager webhook notification (payload version 4).
type notification struct {
	Receiver string          `json:"receiver"`
	Status   string          `json:"status"`
	Alerts   []notifiedAlert `json:"alerts"`
}

// notifiedAlert is one alert of a notification.
type notifiedAlert struct {
	Status      string            `json:"status"` // firing or resolved
	Labels      map[string]string `json:"labels"`
	StartsAt    time.Time         `json:"startsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// name is the alert's name and, when it has one, its resource:
// RvsyncWatchStalled/configmaps.
func (a notifiedAlert) name() string {
	if r := a.Labels[catalog.LabelResource]; r != "" {
		return a.Labels["alertname"] + "/" + r
	}
	return a.Labels["alertname"]
}

// arrival is what one notification brought that was not notified before:
// alerts that fire and alerts that resolved.
type arrival struct {
	at       time.Time
	receiver string
	firing   []string
	resolved []string
}

// receiver is the Alertmanager webhook of the demo. Alertmanager sends a
// group's whole state at every group interval; the receiver reports each
// alert's firing and its resolution once.
type receiver struct {
	srv    *http.Server
	addr   string
	report func(arrival)

	mu       sync.Mutex
	seen     map[string]bool // fingerprint + start + status, notified
	next     chan struct{}   // closed at the next page that fires
	pages    int             // pages that fired
	resolved int             // pages that resolved
}

// startReceiver serves the webhook on a free loopback port; report is
// called for every notification that brings news.
func startReceiver(report func(arrival)) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), report: report, seen: map[string]bool{}, next: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// url is the webhook URL of a receiver name.
func (r *receiver) url(name string) string { return "http://" + r.addr + "/" + name }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	var n notification
	if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.handle(n, time.Now())
}

// handle reports what a notification brought that is new, then wakes
// nextPage's waiters if a page fired: the page is in the event log before
// a fault that waited for it ends.
func (r *receiver) handle(n notification, at time.Time) {
	a, news := r.take(n, at)
	if !news {
		return
	}
	r.report(a)
	if n.Receiver == receiverPage && len(a.firing) > 0 {
		r.mu.Lock()
		close(r.next)
		r.next = make(chan struct{})
		r.mu.Unlock()
	}
}

// take records a notification and returns what it brought that is new
// (news false: nothing).
func (r *receiver) take(n notification, at time.Time) (arrival, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := arrival{at: at, receiver: n.Receiver}
	for _, al := range n.Alerts {
		key := al.Fingerprint + " " + al.StartsAt.String() + " " + al.Status
		if r.seen[key] {
			continue
		}
		r.seen[key] = true
		switch al.Status {
		case "firing":
			a.firing = append(a.firing, al.name())
		case "resolved":
			a.resolved = append(a.resolved, al.name())
		}
	}
	slices.Sort(a.firing)
	slices.Sort(a.resolved)
	if n.Receiver == receiverPage {
		r.pages += len(a.firing)
		r.resolved += len(a.resolved)
	}
	return a, len(a.firing)+len(a.resolved) > 0
}

// nextPage returns a channel closed when a page fires after this call.
func (r *receiver) nextPage() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// counts returns how many pages fired and resolved.
func (r *receiver) counts() (fired, resolved int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pages, r.resolved
}

func (r *receiver) close() error { return r.srv.Close() }

// describe renders an arrival as event-log lines, each timed from the fault
// that began last before it (latest; ok false: none).
func describe(a arrival, latest func(time.Time) (episode, bool)) []string {
	kind := strings.ToUpper(a.receiver)
	if a.receiver != receiverPage && a.receiver != receiverTicket {
		kind = "ALERT"
	}
	since := ""
	if e, ok := latest(a.at); ok {
		since = fmt.Sprintf(" — %s after the %s began", round(a.at.Sub(e.start)), e.kind)
	}
	var out []string
	if len(a.firing) > 0 {
		out = append(out, fmt.Sprintf("%s firing: %s%s", kind, strings.Join(a.firing, ", "), since))
	}
	if len(a.resolved) > 0 {
		ended := since
		if e, ok := latest(a.at); ok && !e.end.IsZero() {
			ended = fmt.Sprintf(" — %s after the %s ended", round(a.at.Sub(e.end)), e.kind)
		}
		out = append(out, fmt.Sprintf("%s resolved: %s%s", kind, strings.Join(a.resolved, ", "), ended))
	}
	return out
}
