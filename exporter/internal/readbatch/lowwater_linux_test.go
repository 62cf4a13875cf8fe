package readbatch

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// While a Conn over a TCP socket waits out its interval, the socket's
// receive low-water mark is holdBytes (what arrives meanwhile wakes no
// one); the read after the wait puts it back to 1 and returns what
// arrived.
func TestAWaitHoldsTheSocketsWakeUps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	c := newConn(client, 3*time.Second)
	defer c.Close()
	if c.raw == nil {
		t.Fatal("a TCP connection gave no raw socket")
	}
	lowWater := func() int {
		var v int
		var err error
		if cerr := c.raw.Control(func(fd uintptr) {
			v, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
		}); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	buf := make([]byte, 1024)
	if _, err := server.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("first read: %q, %v", buf[:n], err)
	}
	if got := lowWater(); got != 1 {
		t.Fatalf("low-water mark %d after a read, want 1", got)
	}
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() { // drained: this read waits out the interval
		n, err := c.Read(buf)
		done <- result{string(buf[:n]), err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for lowWater() != holdBytes {
		if time.Now().After(deadline) {
			t.Fatalf("low-water mark %d while the read waits, want %d", lowWater(), holdBytes)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := server.Write([]byte("second")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.s != "second" {
		t.Fatalf("read after the wait: %q, %v", r.s, r.err)
	}
	if got := lowWater(); got != 1 {
		t.Errorf("low-water mark %d after the wait, want 1", got)
	}
}
