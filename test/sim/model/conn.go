package model

import (
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// conn is a client's connection: every request from one host name of a
// client configuration (client-go shares one HTTP/2 connection between
// the clients of equal configurations). The load balancer pins it to an
// API server on its first request, round-robin, until the server goes
// down or the connection is dropped.
type conn struct {
	host    string
	server  *APIServer
	pin     int // server the simulation pinned it to, -1: any
	frozen  bool
	thaw    chan struct{} // closed when the connection thaws
	latency time.Duration
	refuse  int  // HTTP status that answers every request but watches; 0: none
	hang    bool // every request but watches hangs until the client gives up
	// only, when set, limits refuse and hang to the requests for one
	// resource
	only    string
	streams []*stream
	// disrupted is when the connection was last frozen, thawed, dropped
	// or slowed
	disrupted time.Time
}

var errConnReset = errors.New("read: connection reset by peer")

func (c *Cluster) connLocked(host string) *conn {
	cn := c.conns[host]
	if cn == nil {
		cn = &conn{host: host, pin: -1}
		c.conns[host] = cn
	}
	return cn
}

// route returns the server of a connection, pinning it first if needed;
// nil when no server is up.
func (c *Cluster) routeLocked(cn *conn) *APIServer {
	if cn.server != nil && cn.server.up {
		return cn.server
	}
	cn.server = nil
	if cn.pin >= 0 {
		if s := c.servers[cn.pin]; s.up {
			cn.server = s
		}
		return cn.server
	}
	for range c.servers {
		s := c.servers[c.nextConn%len(c.servers)]
		c.nextConn++
		if s.up {
			cn.server = s
			return s
		}
	}
	return nil
}

// Pin makes the connection of host go to API server i (the balancer is
// forced, as a test pins a client to one server); its open streams break
// if it was elsewhere.
func (tx *Tx) Pin(host string, i int) {
	cn := tx.c.connLocked(host)
	cn.pin = i
	if cn.server != nil && cn.server.ID != i {
		tx.dropLocked(cn)
	}
}

// ServerOf returns the API server the connection of host is pinned to,
// or -1.
func (tx *Tx) ServerOf(host string) int {
	if cn := tx.c.conns[host]; cn != nil && cn.server != nil {
		return cn.server.ID
	}
	return -1
}

// Freeze makes the connection of host half-open (frozen true): requests
// hang, watch events wait. Thawing delivers what waited, or with reset,
// breaks the connection instead (its watches end with an error; the next
// request opens a new connection, possibly to another server).
func (tx *Tx) Freeze(host string, frozen, reset bool) {
	cn := tx.c.connLocked(host)
	if cn.frozen == frozen {
		return
	}
	cn.frozen, cn.disrupted = frozen, now()
	if frozen {
		cn.thaw = make(chan struct{})
		for _, s := range cn.streams {
			s.setFrozen(true)
		}
		return
	}
	close(cn.thaw)
	if reset {
		tx.dropLocked(cn)
	}
	for _, s := range cn.streams {
		s.setFrozen(false)
	}
}

// Drop breaks the connection of host.
func (tx *Tx) Drop(host string) { tx.dropLocked(tx.c.connLocked(host)) }

func (tx *Tx) dropLocked(cn *conn) {
	t := now()
	cn.disrupted = t
	if cn.server != nil {
		for _, wc := range cn.server.cachesInOrder() {
			for _, wt := range wc.watchers {
				if wt.conn == cn {
					wt.end(t, errConnReset)
				}
			}
		}
	}
	cn.server = nil
}

// SetConnLatency delays every response and watch event on the connection
// of host by d.
func (tx *Tx) SetConnLatency(host string, d time.Duration) {
	cn := tx.c.connLocked(host)
	cn.latency, cn.disrupted = d, now()
}

// Refuse answers every request but watches on the connection of host
// (for resource res only, unless res is "") with HTTP status code (429,
// 403, 500...; 0 stops refusing).
func (tx *Tx) Refuse(host, res string, code int) {
	cn := tx.c.connLocked(host)
	cn.refuse, cn.only = code, res
}

// Hang makes every request but watches on the connection of host (for
// resource res only, unless res is "") hang until the client gives up.
func (tx *Tx) Hang(host, res string, hang bool) {
	cn := tx.c.connLocked(host)
	cn.hang, cn.only = hang, res
}

// Close ends every watch stream: the history is over.
func (c *Cluster) Close() {
	c.mu.Lock()
	var all []*stream
	for _, host := range slices.Sorted(maps.Keys(c.conns)) {
		all = append(all, c.conns[host].streams...)
	}
	c.mu.Unlock()
	for _, s := range all {
		s.fail(errConnReset)
		s.setFrozen(false)
	}
}

// stream is the body of a watch response: frames the server sent, each
// readable from its time on.
type stream struct {
	c    *Cluster
	turn time.Duration // how long after its time everything reaches the reader
	mu   sync.Mutex
	cond *sync.Cond
	// frames, the end and the error reach the reader a turn after their
	// time; once thawed, nothing reaches it before thawAt
	frames  []frame
	buf     []byte
	frozen  bool
	thawAt  time.Time
	done    bool
	doneAt  time.Time
	err     error
	errAt   time.Time
	closed  bool
	onClose func()
}

type frame struct {
	data   []byte
	at     time.Time
	effect effect // on the client's view, once consumed
}

// newStreamLocked returns a stream with a turn of its own.
func (c *Cluster) newStreamLocked() *stream {
	s := &stream{c: c, turn: c.turnLocked()}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *stream) push(data []byte, at time.Time, e effect) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.closed || s.err != nil {
		return
	}
	s.frames = append(s.frames, frame{data: data, at: at, effect: e})
	s.cond.Broadcast()
}

func (s *stream) setFrozen(f bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = f
	if !f {
		s.thawAt = now().Add(s.turn)
	}
	s.cond.Broadcast()
}

// finish ends the stream after its frames, at at.
func (s *stream) finish(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done, s.doneAt = true, at
	s.cond.Broadcast()
}

// fail breaks the stream: the reader gets err at once (a reset connection
// loses what was in flight).
func (s *stream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err, s.errAt = err, now().Add(s.turn)
	}
	s.cond.Broadcast()
}

func (s *stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return 0, io.ErrClosedPipe
		case len(s.buf) > 0: // already with the client
			n := copy(p, s.buf)
			s.buf = s.buf[n:]
			return n, nil
		case s.frozen:
			// half-open: nothing more reaches the client, not even the
			// server closing its end (a reset is lost on the way)
			s.cond.Wait()
		case s.wait(s.thawAt): // thawed, not yet this reader's turn
		case s.err != nil:
			if s.wait(s.errAt) {
				continue
			}
			return 0, s.err
		case len(s.frames) > 0:
			f := s.frames[0]
			if s.wait(f.at.Add(s.turn)) {
				continue
			}
			s.frames = s.frames[1:]
			s.buf = f.data
			if f.effect != nil {
				s.mu.Unlock()
				s.c.mu.Lock()
				f.effect(s.c, now())
				s.c.mu.Unlock()
				s.mu.Lock()
			}
		case s.done:
			if s.wait(s.doneAt.Add(s.turn)) {
				continue
			}
			return 0, io.EOF
		default:
			s.cond.Wait()
		}
	}
}

// wait waits until at (or until the stream changes: closed, failed,
// pushed to), if at has not come yet, and reports whether it waited; s.mu
// is held.
func (s *stream) wait(at time.Time) bool {
	d := at.Sub(now())
	if d <= 0 {
		return false
	}
	t := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	s.cond.Wait()
	t.Stop()
	return true
}

func (s *stream) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.cond.Broadcast()
	onClose := s.onClose
	s.mu.Unlock()
	if first && onClose != nil {
		onClose()
	}
	return nil
}
