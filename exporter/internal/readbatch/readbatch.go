// Package readbatch gives a client configuration whose connections are
// read in batches: after a read that drained the socket, the next waits
// until an interval has passed since it, so the events that arrive in
// between are read with one wake-up of the process instead of one each.
package readbatch

import (
	"context"
	"net"
	"syscall"
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
		return newConn(conn, interval), nil
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
//
// While it waits, a socket's receive low-water mark is raised to
// holdBytes, so that what arrives meanwhile does not wake the process: Go's
// network poller watches every socket edge-triggered, whether a read waits
// on it or not, and without the mark each arriving segment wakes a thread
// that then finds nothing to run, most of what a batch was to save.
type Conn struct {
	net.Conn
	Interval time.Duration
	drained  time.Time       // when the latest read that drained the socket returned
	raw      syscall.RawConn // the socket whose low-water mark it raises; nil: none
}

// holdBytes is the low-water mark while a Conn waits: a burst of more
// wakes the process at once. Small enough that Linux does not clamp the
// receive window to it (it does when the mark needs more than the socket's
// receive buffer, 128 KiB by default), which would slow a List from a
// distant API server.
const holdBytes = 16 << 10

func newConn(conn net.Conn, interval time.Duration) *Conn {
	c := &Conn{Conn: conn, Interval: interval}
	if sc, ok := conn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	return c
}

func (c *Conn) Read(b []byte) (int, error) {
	if !c.drained.IsZero() {
		if wait := c.Interval - time.Since(c.drained); wait > 0 {
			held := c.raw != nil && setLowWater(c.raw, holdBytes) == nil
			time.Sleep(wait)
			if held {
				_ = setLowWater(c.raw, 1) // closed meanwhile: the read says so
			}
		}
	}
	n, err := c.Conn.Read(b)
	c.drained = time.Time{}
	if n < len(b) {
		c.drained = time.Now()
	}
	return n, err
}
