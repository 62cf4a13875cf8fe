package probe

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// errWatchClosed reports a watch-list whose stream ended before its
// initial-events-end bookmark.
var errWatchClosed = errors.New("watch closed before the initial-events-end bookmark")

// errorFromEvent turns a watch.Error event into the API error it carries.
func errorFromEvent(ev watch.Event) error {
	if status, ok := ev.Object.(*metav1.Status); ok {
		return &apierrors.StatusError{ErrStatus: *status}
	}
	return apierrors.FromObject(ev.Object)
}
