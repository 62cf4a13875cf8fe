package sim

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain silences client-go's klog: a reflector's warnings (a watch
// ended, a 410) are what the histories inject by the thousand, and the
// invariants, not the log, say what went wrong.
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
