package probe

import (
	"net"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// ownConnection returns a copy of c whose clients get a transport, and so a
// TCP/HTTP2 connection, of their own. client-go shares one transport between
// equal configs; a distinct Dial function makes the config unequal, so a
// half-open informer connection cannot blind the head probe or the canary.
func ownConnection(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c.Dial = dialer.DialContext
	return c
}

// resourceName returns the `resource` label value of a group and resource:
// `plural.group`, or `plural` for the core group.
func resourceName(gr schema.GroupResource) string {
	return catalog.ResourceValue(gr.Group, gr.Resource)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
