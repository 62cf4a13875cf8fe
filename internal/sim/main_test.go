package sim

import (
	"io"
	"os"
	"runtime"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain silences client-go's klog: a reflector's warnings (a watch
// ended, a 410) are what the histories inject by the thousand, and the
// invariants, not the log, say what went wrong. And it runs the bubble's
// goroutines on one processor: with two, goroutines woken at the same
// fake instant ran in an order the machine's load decided, and a history
// did not always replay (TestDeterminism failed one run in three beside a
// busy `make test`); `make test-sim` runs a process per core instead.
func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(1)
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
