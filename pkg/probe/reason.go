package probe

import (
	"context"
	"errors"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// reasonOf classifies an error from the API server or the transport into one
// of the bounded `reason` label values of the catalog.
func reasonOf(err error) string {
	switch {
	case err == nil:
		return ""
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return catalog.ReasonExpired
	case apierrors.IsForbidden(err):
		return catalog.ReasonForbidden
	case apierrors.IsUnauthorized(err):
		return catalog.ReasonUnauthorized
	case apierrors.IsNotFound(err):
		return catalog.ReasonNotFound
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return catalog.ReasonTimeout
	case apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || isNetError(err):
		return catalog.ReasonUnavailable
	case apierrors.IsBadRequest(err) || apierrors.IsUnexpectedObjectError(err):
		return catalog.ReasonDecode
	}
	return catalog.ReasonOther
}

// listResult is the result label of a List that returned err: a 404 is
// the API server saying it does not serve the resource, not a failure.
func listResult(err error) string {
	switch {
	case err == nil:
		return catalog.ResultSuccess
	case apierrors.IsNotFound(err):
		return catalog.ResultNotFound
	}
	return catalog.ResultError
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// errorReasons are the reasons reasonOf returns, in the catalog's order.
var errorReasons = []string{
	catalog.ReasonExpired, catalog.ReasonForbidden, catalog.ReasonUnauthorized, catalog.ReasonNotFound,
	catalog.ReasonTimeout, catalog.ReasonUnavailable, catalog.ReasonDecode, catalog.ReasonOther,
}
