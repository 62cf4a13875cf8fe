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
// goroutines on one processor, so that the goroutines one wake-up sets
// going (a reflector, its informer's handlers) do not run side by side
// either; `make test-sim` runs a process per core instead. Two clients are
// never woken at one instant (the model's turns): before the turns, the
// machine's load decided the order of such wake-ups even on one processor,
// and TestDeterminism failed beside a busy `make test`.
func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(1)
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
