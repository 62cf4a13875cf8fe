package probe

import (
	"context"
	"log/slog"

	"github.com/go-logr/logr"
)

// warn logs msg at slog's warn level: a failure the probe survives (a head
// probe refused, lost canaries, a restored etcd), which an operator should
// see without turning on debug logs but which is not an error of the probe.
// logr has no warn level; through its slog bridge a slog handler (the
// exporter's) records warn, and other sinks record info.
func warn(log logr.Logger, msg string, kv ...any) {
	slog.New(logr.ToSlogHandler(log)).Log(context.Background(), slog.LevelWarn, msg, kv...)
}
