package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	gate *gate

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, gate: newGate(), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay makes every chunk of bytes, in both directions, arrive d later
// than it would have; throughput is unchanged. 0 removes the delay.
func (p *Proxy) SetDelay(d time.Duration) { p.gate.setDelay(d) }

// Stall stops forwarding in both directions on every connection, present
// and future, while keeping them open: data read meanwhile is held.
func (p *Proxy) Stall() { p.gate.stall() }

// Release ends a stall; held data flows on.
func (p *Proxy) Release() { p.gate.release() }

// Reset closes every open connection, as a crashed load balancer would.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops the proxy and closes all connections.
func (p *Proxy) Close() error {
	p.gate.close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	upstream, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, true) || !p.track(upstream, true) {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(upstream, client) }()
	go func() { defer wg.Done(); p.pipe(client, upstream) }()
	wg.Wait()
	p.track(client, false)
	p.track(upstream, false)
}

type chunk struct {
	data []byte
	at   time.Time // when it was read
}

// pipe copies src to dst: a reader goroutine stamps chunks as they arrive,
// the writer releases each one when its delay has passed and no stall holds.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		if !p.gate.wait(c.at) {
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				_ = src.Close()
			}
			return
		}
	}
}
