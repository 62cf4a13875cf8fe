package probe

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
)

// TestWarnIsSlogWarn: through the exporter's slog handler, warn records
// level WARN, which an operator sees at the default info level.
func TestWarnIsSlogWarn(t *testing.T) {
	var b bytes.Buffer
	warn(logr.FromSlogHandler(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo})), "head probe failed", "resource", "pods")
	var line struct{ Level, Msg, Resource string }
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	if line.Level != "WARN" || line.Msg != "head probe failed" || line.Resource != "pods" {
		t.Errorf("logged %+v, want level WARN with the message and its key-values", line)
	}
	b.Reset()
	warn(logr.FromSlogHandler(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelError})), "dropped")
	if b.Len() != 0 {
		t.Errorf("at level error a warning is logged: %s", b.String())
	}
}
