// Package readbatch gives a client configuration whose connections are
// read in batches: after a read that drained the socket, the next waits
// until an interval has passed since it, so the events that arrive in
// between are read with one wake-up of the process instead of one each.
package readbatch

import (
	"context"
	"net"
	"time"

	"k8s.io/client-go/rest"
)

// Config returns a copy of c whose clients share one transport (and so
// one connection per API server, as clients of equal configurations do)
// whose connections are read at most every interval after the socket was
// drained. A bulk transfer is not slowed: a read that filled its buffer is
// followed at once.
func Config(c *rest.Config, interval time.Duration) (*rest.Config, error) {
	withDial := rest.CopyConfig(c)
	dialer := withDial.Dial
	if dialer == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dialer = d.DialContext
	}
	withDial.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &Conn{Conn: conn, Interval: interval}, nil
	}
	rt, err := rest.TransportFor(withDial)
	if err != nil {
		return nil, err
	}
	out := rest.AnonymousClientConfig(c)
	out.TLSClientConfig = rest.TLSClientConfig{}
	out.Dial = nil
	out.Transport = rt
	return out, nil
}

// Conn reads its connection in batches (see Config).
type Conn struct {
	net.Conn
	Interval time.Duration
	drained  time.Time // when the latest read that drained the socket returned
}

func (c *Conn) Read(b []byte) (int, error) {
	if !c.drained.IsZero() {
		if wait := c.Interval - time.Since(c.drained); wait > 0 {
			time.Sleep(wait)
		}
	}
	n, err := c.Conn.Read(b)
	c.drained = time.Time{}
	if n < len(b) {
		c.drained = time.Now()
	}
	return n, err
}
