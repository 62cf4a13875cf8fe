package lb

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds a dial to a backend; a backend that does not answer
// within it is skipped for this connection.
const dialTimeout = 5 * time.Second

// Balancer is a round-robin TCP load balancer.
type Balancer struct {
	ln       net.Listener
	backends []*Backend

	mu     sync.Mutex // guards next, closed and every backend's state
	next   int
	closed bool
	wg     sync.WaitGroup
}

// Backend is one target of the balancer.
type Backend struct {
	// Addr is the backend's host:port.
	Addr string

	b       *Balancer
	drained bool
	frozen  chan struct{} // non-nil while frozen; closed when thawed
	conns   map[*pinned]struct{}
	routed  int
}

// pinned is one client connection and the backend connection it is pinned to.
type pinned struct {
	client, server net.Conn
}

// Start listens on a free loopback port and balances over backends
// (host:port each), in that order.
func Start(backends ...string) (*Balancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("lb: no backends")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Balancer{ln: ln}
	for _, a := range backends {
		b.backends = append(b.backends, &Backend{Addr: a, b: b, conns: map[*pinned]struct{}{}})
	}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the balancer's listening address (host:port).
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Backends are the backends in round-robin order.
func (b *Balancer) Backends() []*Backend { return b.backends }

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines to end.
func (b *Balancer) Close() error {
	b.mu.Lock()
	b.closed = true
	for _, be := range b.backends {
		be.thawLocked()
	}
	b.mu.Unlock()
	err := b.ln.Close()
	for _, be := range b.backends {
		be.Reset()
	}
	b.wg.Wait()
	return err
}

func (b *Balancer) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		// the backend is chosen here, in the order connections arrive: a
		// choice made in each connection's goroutine would let a later
		// connection take an earlier one's turn
		server, be, err := b.dial()
		if err != nil {
			_ = c.Close()
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.serve(c, server, be)
		}()
	}
}

// serve forwards between c and its pinned backend connection until either
// side closes.
func (b *Balancer) serve(c, server net.Conn, be *Backend) {
	p := &pinned{client: c, server: server}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = c.Close()
		_ = server.Close()
		return
	}
	be.conns[p] = struct{}{}
	be.routed++
	b.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { be.copy(server, c) })
	wg.Go(func() { be.copy(c, server) })
	wg.Wait()
	b.mu.Lock()
	delete(be.conns, p)
	b.mu.Unlock()
}

// dial connects to the backends in round-robin order, starting at the next
// one, skipping drained backends and those that refuse: the first that
// answers gets the connection.
func (b *Balancer) dial() (net.Conn, *Backend, error) {
	var errs []error
	for range b.backends {
		b.mu.Lock()
		be := b.backends[b.next%len(b.backends)]
		b.next++
		drained, closed := be.drained, b.closed
		b.mu.Unlock()
		if closed {
			return nil, nil, net.ErrClosed
		}
		if drained {
			continue
		}
		s, err := net.DialTimeout("tcp", be.Addr, dialTimeout)
		if err == nil {
			return s, be, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, fmt.Errorf("lb: no backend answered: %w", errors.Join(errs...))
}

// copy forwards from src to dst until src ends, holding each chunk while
// the backend is frozen; then it closes dst, so the other side ends too.
func (be *Backend) copy(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			be.waitThawed()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = src.Close()
			}
			return
		}
	}
}

// waitThawed blocks while the backend is frozen.
func (be *Backend) waitThawed() {
	be.b.mu.Lock()
	ch := be.frozen
	be.b.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Freeze holds every byte on the backend's connections, in both
// directions, open and future ones alike, while keeping them open: the
// backend looks hung to its clients. Held bytes flow on after Thaw.
func (be *Backend) Freeze() {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	if be.frozen == nil {
		be.frozen = make(chan struct{})
	}
}

// Thaw ends a Freeze.
func (be *Backend) Thaw() {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	be.thawLocked()
}

func (be *Backend) thawLocked() {
	if be.frozen != nil {
		close(be.frozen)
		be.frozen = nil
	}
}

// Drain takes the backend out of rotation: new connections go to the
// others, open ones carry on until their ends close them.
func (be *Backend) Drain() {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	be.drained = true
}

// Undrain puts the backend back into rotation.
func (be *Backend) Undrain() {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	be.drained = false
}

// Reset closes every open connection of the backend, as a crashed backend
// or balancer would; clients see their connections end.
func (be *Backend) Reset() {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	for p := range be.conns {
		_ = p.client.Close()
		_ = p.server.Close()
	}
}

// Open is the number of connections pinned to the backend now.
func (be *Backend) Open() int {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	return len(be.conns)
}

// Routed is the number of connections ever pinned to the backend.
func (be *Backend) Routed() int {
	be.b.mu.Lock()
	defer be.b.mu.Unlock()
	return be.routed
}
