package lb

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// backend answers every line it reads with its name, so a client can tell
// which backend its connection is pinned to.
func backend(t *testing.T, name string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := c.Write([]byte(name + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// ask sends a line and returns the answering backend's name, or the error
// when none answers within timeout.
func (c *client) ask(timeout time.Duration) (string, error) {
	_ = c.c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.c.Write([]byte("who\n")); err != nil {
		return "", err
	}
	s, err := c.r.ReadString('\n')
	return strings.TrimSpace(s), err
}

func start(t *testing.T, names ...string) (*Balancer, []net.Listener) {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for _, n := range names {
		ln := backend(t, n)
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	b, err := Start(addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, lns
}

const answer = 10 * time.Second // generous: a loaded machine

func TestRoundRobinPerConnectionPinned(t *testing.T) {
	b, _ := start(t, "a", "b", "c")
	var clients []*client
	var got []string
	for range 6 {
		c := dial(t, b.Addr())
		name, err := c.ask(answer)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		got = append(got, name)
	}
	if want := "a b c a b c"; strings.Join(got, " ") != want {
		t.Errorf("connections went to %v, want %s", got, want)
	}
	for i, c := range clients { // every later request of a connection reaches the same backend
		for range 3 {
			name, err := c.ask(answer)
			if err != nil || name != got[i] {
				t.Errorf("connection %d pinned to %s answered %q, %v", i, got[i], name, err)
			}
		}
	}
	for i, be := range b.Backends() {
		if be.Open() != 2 || be.Routed() != 2 {
			t.Errorf("backend %d: %d open, %d routed; want 2 and 2", i, be.Open(), be.Routed())
		}
	}
}

func TestDrainKeepsOpenConnections(t *testing.T) {
	b, _ := start(t, "a", "b")
	first := dial(t, b.Addr())
	if name, err := first.ask(answer); err != nil || name != "a" {
		t.Fatalf("first connection: %q, %v", name, err)
	}
	b.Backends()[0].Drain()
	for range 3 {
		if name, err := dial(t, b.Addr()).ask(answer); err != nil || name != "b" {
			t.Errorf("new connection while a drains: %q, %v; want b", name, err)
		}
	}
	if name, err := first.ask(answer); err != nil || name != "a" {
		t.Errorf("open connection of drained a: %q, %v", name, err)
	}
	b.Backends()[0].Undrain()
	seen := map[string]bool{}
	for range 2 {
		name, err := dial(t, b.Addr()).ask(answer)
		if err != nil {
			t.Fatal(err)
		}
		seen[name] = true
	}
	if !seen["a"] {
		t.Errorf("a back in rotation got no connection: %v", seen)
	}
}

func TestFreezeHoldsBytesUntilThaw(t *testing.T) {
	b, _ := start(t, "a", "b")
	ca, cb := dial(t, b.Addr()), dial(t, b.Addr())
	for c, want := range map[*client]string{ca: "a", cb: "b"} {
		if name, err := c.ask(answer); err != nil || name != want {
			t.Fatalf("before the freeze: %q, %v; want %s", name, err, want)
		}
	}
	b.Backends()[0].Freeze()
	// what a frozen connection does not do can only be seen over a while
	if name, err := ca.ask(500 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("frozen a answered %q, %v", name, err)
	}
	if name, err := cb.ask(answer); err != nil || name != "b" {
		t.Errorf("b while a is frozen: %q, %v", name, err)
	}
	// the next connection, round-robined to a, is frozen too; the one after reaches b
	late := dial(t, b.Addr())
	if name, err := late.ask(500 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection made to frozen a answered %q, %v", name, err)
	}
	if name, err := dial(t, b.Addr()).ask(answer); err != nil || name != "b" {
		t.Errorf("the connection after: %q, %v; want b", name, err)
	}
	b.Backends()[0].Thaw()
	_ = ca.c.SetDeadline(time.Now().Add(answer))
	if s, err := ca.r.ReadString('\n'); err != nil || strings.TrimSpace(s) != "a" {
		t.Errorf("held answer after the thaw: %q, %v", s, err)
	}
	if name, err := ca.ask(answer); err != nil || name != "a" {
		t.Errorf("a after the thaw: %q, %v", name, err)
	}
}

func TestDeadBackendSkippedAndResetCloses(t *testing.T) {
	b, lns := start(t, "a", "b", "c")
	c := dial(t, b.Addr())
	if name, err := c.ask(answer); err != nil || name != "a" {
		t.Fatalf("%q, %v", name, err)
	}
	_ = lns[1].Close() // b is down: its dials fail
	for range 4 {
		name, err := dial(t, b.Addr()).ask(answer)
		if err != nil || name == "b" {
			t.Errorf("with b down: %q, %v", name, err)
		}
	}
	b.Backends()[0].Reset()
	if _, err := c.ask(answer); err == nil {
		t.Error("a connection of a reset backend still answers")
	}
	if n := b.Backends()[0].Open(); n != 0 {
		// the forwarding goroutines leave once both copies end
		deadline := time.Now().Add(answer)
		for b.Backends()[0].Open() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := b.Backends()[0].Open(); n != 0 {
			t.Errorf("%d connections of a open after its reset", n)
		}
	}
}
