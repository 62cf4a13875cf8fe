package process

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A port FreeAddr hands out is marked in envtest's port cache the way
// envtest marks its own: envtest's attempt to take the mark (an exclusive,
// non-blocking flock of port-<n>) fails, so it picks another port for its
// etcd or kube-apiserver; and FreeAddr never hands out one port twice.
func TestFreeAddrMarksItsPortForEnvtest(t *testing.T) {
	dir, err := portCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr handed out %s twice", addr)
		}
		seen[addr] = true
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		// envtest's Suggest, as it takes a mark
		fd, err := syscall.Open(filepath.Join(dir, "port-"+strconv.Itoa(p)), syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		_ = syscall.Close(fd)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("envtest could take the mark of %s, which FreeAddr handed out (flock: %v)", addr, err)
		}
	}
}
