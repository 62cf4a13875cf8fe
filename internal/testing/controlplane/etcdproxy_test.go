package controlplane

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Each --etcd-servers endpoint gets a proxy of its own, in order, and the
// flag that reaches etcd through them keeps the endpoints' syntax; a
// server's StallEtcd holds the bytes on all of them until ReleaseEtcd.
func TestEtcdProxies(t *testing.T) {
	var members []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go echo(ln)
		members = append(members, "http://"+ln.Addr().String())
	}
	e := &Env{}
	defer func() {
		for _, p := range e.etcdProxies {
			_ = p.Close()
		}
	}()
	proxies, flag, err := e.startEtcdProxies(strings.Join(members, ","))
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + proxies[0].Addr() + ",http://" + proxies[1].Addr(); len(proxies) != 2 || flag != want {
		t.Fatalf("%d proxies, flag %q; want 2, %q", len(proxies), flag, want)
	}
	s := &APIServer{Name: "kube-apiserver-1", EtcdProxies: proxies}
	s.StallEtcd()
	var conns []net.Conn
	for _, p := range proxies {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Fatalf("through %s with its etcd stalled: %d bytes, %v", p.Addr(), n, err)
		}
		conns = append(conns, c)
	}
	s.ReleaseEtcd()
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
			t.Fatalf("after the release: %q, %v", b, err)
		}
	}

	if _, _, err := e.startEtcdProxies("127.0.0.1:2379"); err == nil {
		t.Error("an endpoint without a scheme was taken")
	}
}

// The option belongs to an HA control plane: with one API server Start
// refuses it before starting anything.
func TestEtcdProxiesNeedSeveralAPIServers(t *testing.T) {
	if _, err := Start(Options{EtcdProxies: true}); err == nil || !strings.Contains(err.Error(), "APIServers") {
		t.Errorf("Start with EtcdProxies and one API server: %v", err)
	}
}

func echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
	}
}
