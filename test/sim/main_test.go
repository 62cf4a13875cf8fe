package sim

import (
	"io"
	"os"
	"runtime"
	"runtime/debug"
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
// and TestDeterminism failed beside a busy `make test`. The garbage
// collector runs at a quarter of its default pace (GOGC=400, unless GOGC
// says): the page histories' rule evaluation allocates a query per rule
// per step, and collecting it was a quarter of their CPU (3 page
// histories: 19.0 s at the default, 14.4 s at 400, 0.6 GB instead of
// 0.25); the simulation's clock is virtual, so its results do not change.
func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(1)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
