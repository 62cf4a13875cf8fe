package model

import (
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// hostConns are the connections of one client host (the clients of one
// rest.Config: client-go shares a transport between equal configurations)
// and what the simulation does to all of them.
//
// On HTTP/2 (client-go's default) one connection carries every request and
// watch of the host. On HTTP/1.1 (DISABLE_HTTP2, or a proxy that
// downgrades) a connection carries one request at a time: a request takes
// an idle connection of the host's pool, the one used last first as Go's
// transport does, or dials a new one; a watch holds its connection until
// it ends. The load balancer places each new connection on an API server,
// round-robin, and pins it there until the server goes down or the
// connection is dropped: on HTTP/1.1 the requests of one client reach
// several servers.
//
// A frozen host is what a fault proxy's stall makes of it (every
// connection, present and future, open and forwarding nothing), as
// client-go's transports see it: a request on a frozen connection (HTTP/2's
// one, an idle one of the HTTP/1.1 pool) hangs; a new connection connects
// but its TLS handshake gets no answer, and the dial fails after
// tlsHandshakeTimeout; on HTTP/2 the health check closes the frozen
// connection (h2HealthCloseLocked).
type hostConns struct {
	name   string
	pooled bool    // HTTP/1.1
	conns  []*conn // every open connection, in the order they were dialled
	idle   []*conn // HTTP/1.1: the idle ones, the one used last at the end
	pin    int     // server the simulation pinned the host to, -1: any
	frozen bool
	thaw   chan struct{} // closed when the host's connections thaw
	// latency delays every response and watch event on the host's
	// connections
	latency time.Duration
	refuse  int  // HTTP status that answers every request but watches; 0: none
	hang    bool // every request but watches hangs until the client gives up
	// only, when set, limits refuse and hang to the requests for one
	// resource
	only string
	// disrupted is when a connection of the host was last frozen, thawed,
	// dropped or slowed: a connection dialled later starts with it, as
	// the host's one HTTP/2 connection keeps it across reconnections
	disrupted time.Time
}

// conn is one TCP connection of a host.
type conn struct {
	h       *hostConns
	host    string
	server  *APIServer
	streams []*stream
	// disrupted is when the connection was last frozen, thawed, dropped
	// or slowed
	disrupted time.Time
	idleAt    time.Time // HTTP/1.1: when it went back to the pool
	// HTTP/2: when the client last read a frame of the connection
	// (an answer, a watch's event or end, the dial's settings), and what
	// its health check does while the host is frozen: lost is closed when
	// it closes the connection, at healthA
	lastRead time.Time
	lost     chan struct{}
	healthA  *action
}

var errConnReset = errors.New("read: connection reset by peer")

// What client-go's transports do with a frozen connection (measured
// through the fault proxy's stall, kube-apiserver 1.37.2, client-go
// 0.37.2, golang.org/x/net 0.61.0): k8s.io/apimachinery/pkg/util/net
// gives HTTP/2 a health check (HTTP2_READ_IDLE_TIMEOUT_SECONDS,
// HTTP2_PING_TIMEOUT_SECONDS): a connection that read no frame for 30s is
// pinged, and closed when no answer came in 15s; its requests and watches
// fail with errConnLost (client-go retries a GET once, 1s later; a watch's
// reader gets it as an error event). A new connection's TCP connect
// succeeds, its TLS handshake waits: k8s.io/client-go/transport gives it
// 10s.
const (
	h2ReadIdleTimeout   = 30 * time.Second
	h2PingTimeout       = 15 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
)

var errConnLost = errors.New("http2: client connection lost")

// errTLSHandshakeTimeout is net/http's error for a dial whose handshake
// took longer than the transport's TLSHandshakeTimeout: a net.Error that
// times out (client-go retries a watch on it, up to 10 times, 1s apart).
var errTLSHandshakeTimeout error = tlsHandshakeTimeoutError{}

type tlsHandshakeTimeoutError struct{}

func (tlsHandshakeTimeoutError) Timeout() bool   { return true }
func (tlsHandshakeTimeoutError) Temporary() bool { return true }
func (tlsHandshakeTimeoutError) Error() string   { return "net/http: TLS handshake timeout" }

// idleConnTimeout is how long an idle HTTP/1.1 connection stays in the pool
// (client-go's transports: 90s).
const idleConnTimeout = 90 * time.Second

func (c *Cluster) hostLocked(host string) *hostConns {
	h := c.hosts[host]
	if h == nil {
		h = &hostConns{name: host, pin: -1}
		c.hosts[host] = h
	}
	return h
}

// connOfLocked returns a connection of host h for a request: HTTP/2's one
// connection, or on HTTP/1.1 an idle one of the pool (the last used) or a
// new one. releaseLocked gives an HTTP/1.1 connection back.
func (c *Cluster) connOfLocked(h *hostConns) *conn {
	if !h.pooled {
		if len(h.conns) == 0 {
			h.conns = append(h.conns, &conn{h: h, host: h.name})
		}
		return h.conns[0]
	}
	if cn := c.idleConnLocked(h); cn != nil {
		return cn
	}
	cn := &conn{h: h, host: h.name, disrupted: h.disrupted}
	h.conns = append(h.conns, cn)
	return cn
}

// idleConnLocked takes the idle HTTP/1.1 connection of h's pool used
// last, closing those idle for idleConnTimeout; nil when none is left.
func (c *Cluster) idleConnLocked(h *hostConns) *conn {
	t := now()
	for len(h.idle) > 0 {
		cn := h.idle[len(h.idle)-1]
		h.idle = h.idle[:len(h.idle)-1]
		if cn.server != nil && t.Sub(cn.idleAt) < idleConnTimeout {
			return cn
		}
		c.closeLocked(cn)
	}
	return nil
}

// releaseLocked ends a request's use of cn: on HTTP/1.1 it goes back to the
// pool, unless it was dropped.
func (c *Cluster) releaseLocked(cn *conn) {
	if !cn.h.pooled {
		return
	}
	if cn.server == nil {
		c.closeLocked(cn)
		return
	}
	cn.idleAt = now()
	cn.h.idle = append(cn.h.idle, cn)
}

// closeLocked removes an HTTP/1.1 connection from its host.
func (c *Cluster) closeLocked(cn *conn) {
	h := cn.h
	h.conns = slices.DeleteFunc(h.conns, func(x *conn) bool { return x == cn })
	h.idle = slices.DeleteFunc(h.idle, func(x *conn) bool { return x == cn })
}

// watchConnLocked returns the connection that carries the watch of res of
// host (HTTP/2: its one connection, watch or not), or nil.
func (c *Cluster) watchConnLocked(host, res string) *conn {
	h := c.hosts[host]
	if h == nil || len(h.conns) == 0 {
		return nil
	}
	if !h.pooled {
		return h.conns[0]
	}
	for _, cn := range h.conns {
		if cn.server == nil || cn.server.caches[res] == nil {
			continue
		}
		for _, wt := range cn.server.caches[res].watchers {
			if wt.conn == cn && !wt.done {
				return cn
			}
		}
	}
	return nil
}

// Routes returns, by host, the API servers its open connections are placed
// on, ascending (a host none of whose connections is placed is absent):
// where its requests and watches go.
func (tx *Tx) Routes() map[string][]int {
	out := map[string][]int{}
	for host, h := range tx.c.hosts {
		for _, cn := range h.conns {
			if cn.server != nil && !slices.Contains(out[host], cn.server.ID) {
				out[host] = append(out[host], cn.server.ID)
			}
		}
		slices.Sort(out[host])
	}
	return out
}

// route returns the server of a connection, pinning it first if needed;
// nil when no server is up.
func (c *Cluster) routeLocked(cn *conn) *APIServer {
	if cn.server != nil && cn.server.up {
		return cn.server
	}
	cn.server = nil
	if pin := cn.h.pin; pin >= 0 {
		if s := c.servers[pin]; s.up {
			cn.server, cn.lastRead = s, now()
		}
		return cn.server
	}
	for range c.servers {
		s := c.servers[c.nextConn%len(c.servers)]
		c.nextConn++
		if s.up {
			cn.server, cn.lastRead = s, now()
			return s
		}
	}
	return nil
}

// liveConnLocked returns the connection a request of h goes on without a
// dial: HTTP/2's one connection, while it has a server; nil otherwise.
func liveConnLocked(h *hostConns) *conn {
	if h.pooled || len(h.conns) == 0 || h.conns[0].server == nil {
		return nil
	}
	return h.conns[0]
}

// readLocked records that the client read a frame of cn at t.
func (cn *conn) readLocked(t time.Time) {
	if t.After(cn.lastRead) {
		cn.lastRead = t
	}
}

// h2HealthCheckLocked schedules what HTTP/2's health check does to cn,
// frozen at t: the first ping after the last frame the client read (one
// every h2ReadIdleTimeout of silence; those sent before t were answered)
// gets no answer, and the connection closes h2PingTimeout later.
func (c *Cluster) h2HealthCheckLocked(cn *conn, t time.Time) {
	last := cn.lastRead
	for _, s := range cn.streams {
		s.mu.Lock()
		if s.lastRead.After(last) {
			last = s.lastRead
		}
		s.mu.Unlock()
	}
	ping := last.Add(h2ReadIdleTimeout)
	if ping.Before(t) {
		ping = ping.Add((t.Sub(ping) + h2ReadIdleTimeout - 1) / h2ReadIdleTimeout * h2ReadIdleTimeout)
	}
	lost := make(chan struct{})
	cn.lost = lost
	cn.healthA = c.scheduleLocked(ping.Add(h2PingTimeout), func(time.Time) {
		c.h2HealthCloseLocked(cn, lost)
	})
}

// h2HealthCloseLocked closes cn, frozen, as its health check does: its
// watches end with errConnLost (what the server sent meanwhile, its
// end of a watch too, is lost), and so do the requests hung on it; the
// next request dials a new connection.
func (c *Cluster) h2HealthCloseLocked(cn *conn, lost chan struct{}) {
	if cn.lost != lost {
		return
	}
	cn.lost, cn.healthA = nil, nil
	close(lost)
	(&Tx{c: c}).dropLocked(cn, errConnLost)
	for _, s := range cn.streams {
		s.fail(errConnLost)
		s.setFrozen(false)
	}
}

// SetHTTP1 makes the clients of host speak HTTP/1.1 (pooled true: a pool
// of connections, each placed by the balancer) or HTTP/2 (one connection),
// before their first request.
func (tx *Tx) SetHTTP1(host string, pooled bool) { tx.c.hostLocked(host).pooled = pooled }

// Pin makes the connections of host go to API server i (the balancer is
// forced, as a test pins a client to one server); open streams elsewhere
// break.
func (tx *Tx) Pin(host string, i int) {
	h := tx.c.hostLocked(host)
	h.pin = i
	for _, cn := range slices.Clone(h.conns) {
		if cn.server != nil && cn.server.ID != i {
			tx.dropLocked(cn, errConnReset)
		}
	}
}

// Freeze makes the connections of host half-open (frozen true): requests
// hang, watch events wait. Thawing delivers what waited, or with reset,
// breaks the connections instead (their watches end with an error; the
// next request opens a new connection, possibly to another server).
func (tx *Tx) Freeze(host string, frozen, reset bool) {
	h := tx.c.hostLocked(host)
	if h.frozen == frozen {
		return
	}
	h.frozen = frozen
	t := now()
	h.disrupted = t
	for _, cn := range h.conns {
		cn.disrupted = t
	}
	if frozen {
		h.thaw = make(chan struct{})
		for _, cn := range h.conns {
			for _, s := range cn.streams {
				s.setFrozen(true)
			}
		}
		if cn := liveConnLocked(h); cn != nil {
			tx.c.h2HealthCheckLocked(cn, t)
		}
		return
	}
	close(h.thaw)
	for _, cn := range h.conns {
		tx.c.cancelLocked(cn.healthA)
		cn.lost, cn.healthA = nil, nil
	}
	if reset {
		for _, cn := range slices.Clone(h.conns) {
			tx.dropLocked(cn, errConnReset)
		}
	}
	for _, cn := range h.conns {
		for _, s := range cn.streams {
			s.setFrozen(false)
		}
	}
}

// Drop breaks the connections of host.
func (tx *Tx) Drop(host string) {
	for _, cn := range slices.Clone(tx.c.hostLocked(host).conns) {
		tx.dropLocked(cn, errConnReset)
	}
}

// dropLocked breaks cn: its watches end with err.
func (tx *Tx) dropLocked(cn *conn, err error) {
	t := now()
	cn.disrupted, cn.h.disrupted = t, t
	if cn.server != nil {
		for _, wc := range cn.server.cachesInOrder() {
			// (end takes the watcher out of wc.watchers)
			for _, wt := range slices.Clone(wc.watchers) {
				if wt.conn == cn {
					wt.end(t, err)
				}
			}
		}
	}
	// a reset reaches the reader of every stream of cn, frozen or not,
	// whatever its server sent before (a watch the server had ended, its
	// end still in flight: a resource deleted while the connection was
	// frozen); a pooled connection is closed and never thawed, and its
	// streams waited forever (simulation seed 1409001)
	for _, s := range cn.streams {
		s.fail(err)
		s.setFrozen(false)
	}
	cn.server = nil
	if cn.h.pooled {
		tx.c.closeLocked(cn)
	}
}

// SetConnLatency delays every response and watch event on the
// connections of host by d.
func (tx *Tx) SetConnLatency(host string, d time.Duration) {
	h := tx.c.hostLocked(host)
	h.latency, h.disrupted = d, now()
	for _, cn := range h.conns {
		cn.disrupted = h.disrupted
	}
}

// Refuse answers every request but watches on the connections of host
// (for resource res only, unless res is "") with HTTP status code (429,
// 403, 500...; 0 stops refusing).
func (tx *Tx) Refuse(host, res string, code int) {
	h := tx.c.hostLocked(host)
	h.refuse, h.only = code, res
}

// Hang makes every request but watches on the connections of host (for
// resource res only, unless res is "") hang until the client gives up.
func (tx *Tx) Hang(host, res string, hang bool) {
	h := tx.c.hostLocked(host)
	h.hang, h.only = hang, res
}

// Close ends every watch stream: the history is over.
func (c *Cluster) Close() {
	c.mu.Lock()
	var all []*stream
	for _, host := range slices.Sorted(maps.Keys(c.hosts)) {
		for _, cn := range c.hosts[host].conns {
			all = append(all, cn.streams...)
		}
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
	// lastRead is when the reader last took a frame, its end or its error
	lastRead time.Time
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
			s.lastRead = now()
			return 0, s.err
		case len(s.frames) > 0:
			f := s.frames[0]
			if s.wait(f.at.Add(s.turn)) {
				continue
			}
			s.frames = s.frames[1:]
			s.buf = f.data
			s.lastRead = now()
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
			s.lastRead = now()
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
