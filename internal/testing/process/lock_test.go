package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockHostWaitsAndNamesTheHolder: a second locker waits while the first
// holds the lock, hears once who holds it (pid and command line), gives up
// only when its context ends, and gets the lock once the first lets go.
func TestLockHostWaitsAndNamesTheHolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "host.lock")
	first, err := LockHost(context.Background(), file, "first", nil)
	if err != nil {
		t.Fatal(err)
	}
	var heard []string
	logf := func(format string, args ...any) { heard = append(heard, fmt.Sprintf(format, args...)) }
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := LockHost(ctx, file, "the second waits", logf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while the first holds it: %v; want the context's deadline", err)
	}
	if len(heard) != 1 || !strings.Contains(heard[0], fmt.Sprintf("pid %d since", os.Getpid())) || !strings.Contains(heard[0], "the second waits") {
		t.Fatalf("the waiter heard %q; want one line naming what it waits for and this process (pid %d) as the holder", heard, os.Getpid())
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	second, err := LockHost(context.Background(), file, "the second", logf)
	if err != nil {
		t.Fatalf("lock after the holder let go: %v", err)
	}
	if err := second.Unlock(); err != nil {
		t.Fatal(err)
	}
}
