package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

func TestReason(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{apierrors.NewResourceExpired("too old resource version: 1 (5)"), catalog.ReasonExpired},
		{apierrors.NewGone("gone"), catalog.ReasonExpired}, //lint:ignore SA1019 older API servers still answer 410 Gone; it must read as expired
		{apierrors.NewForbidden(gr, "", errors.New("rbac")), catalog.ReasonForbidden},
		{apierrors.NewUnauthorized("no"), catalog.ReasonUnauthorized},
		{apierrors.NewNotFound(gr, ""), catalog.ReasonNotFound},
		{apierrors.NewTimeoutError("slow", 1), catalog.ReasonTimeout},
		{fmt.Errorf("list: %w", context.DeadlineExceeded), catalog.ReasonTimeout},
		{apierrors.NewTooManyRequests("busy", 1), catalog.ReasonUnavailable},
		{apierrors.NewServiceUnavailable("down"), catalog.ReasonUnavailable},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, catalog.ReasonUnavailable},
		{apierrors.NewBadRequest("bad"), catalog.ReasonDecode},
		{errors.New("something else"), catalog.ReasonOther},
	} {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("reasonOf(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}
