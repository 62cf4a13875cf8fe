//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// notifiedAlert is one alert of an Alertmanager webhook notification
// (payload version 4), stamped with when the receiver got it.
type notifiedAlert struct {
	Status      string            `json:"status"` // firing or resolved
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Received    time.Time         `json:"-"`
	// Receiver and GroupKey are those of the notification: Alertmanager's
	// receiver name and the group the alert was notified in (one group is
	// one PagerDuty incident).
	Receiver string `json:"-"`
	GroupKey string `json:"-"`
}

func (a notifiedAlert) String() string {
	return fmt.Sprintf("%s %s %v %v (starts %s, received %s by %s in group %s)", a.Status, a.Labels["alertname"],
		a.Labels, a.Annotations, a.StartsAt.Format(time.TimeOnly), a.Received.Format(time.TimeOnly), a.Receiver, a.GroupKey)
}

// webhook is an Alertmanager webhook receiver that records every alert of
// every notification.
type webhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	alerts []notifiedAlert
}

func startWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(w.receive))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) receive(rw http.ResponseWriter, r *http.Request) {
	var n struct {
		Receiver string          `json:"receiver"`
		GroupKey string          `json:"groupKey"`
		Alerts   []notifiedAlert `json:"alerts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range n.Alerts {
		a.Received, a.Receiver, a.GroupKey = now, n.Receiver, n.GroupKey
		w.alerts = append(w.alerts, a)
	}
}

// received returns the alerts received so far, oldest first.
func (w *webhook) received() []notifiedAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]notifiedAlert(nil), w.alerts...)
}

// find returns the first received alert that match accepts.
func (w *webhook) find(match func(notifiedAlert) bool) (notifiedAlert, bool) {
	for _, a := range w.received() {
		if match(a) {
			return a, true
		}
	}
	return notifiedAlert{}, false
}

// wait waits until an alert that match accepts has been received.
func (w *webhook) wait(t *testing.T, timeout time.Duration, what string, match func(notifiedAlert) bool) notifiedAlert {
	t.Helper()
	var found notifiedAlert
	testenv.WaitFor(t, timeout, what, func() (bool, error) {
		var ok bool
		found, ok = w.find(match)
		return ok, nil
	})
	return found
}

// dump renders every received alert for a failure log.
func (w *webhook) dump() string {
	var b strings.Builder
	for _, a := range w.received() {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return b.String()
}
