package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A run's logger writes exactly what base.With(attrs...) would, and formats
// nothing for a run that logs nothing.
func TestLazyWithLogsWhatWithLogs(t *testing.T) {
	t.Parallel()
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	attrs := []any{slog.String("run", "r1"), slog.String("task", "t"), slog.Int("attempt", 2)}
	eager := slog.New(slog.NewTextHandler(&want, opts)).With("worker", "w").With(attrs...)
	lazy := lazyWith(slog.New(slog.NewTextHandler(&got, opts)).With("worker", "w"),
		slog.String("run", "r1"), slog.String("task", "t"), slog.Int("attempt", 2))
	for _, l := range []*slog.Logger{eager, lazy} {
		l.Info("attempt failed", "err", "boom")
		l.WithGroup("g").With("k", "v").Warn("grouped")
		l.Debug("not enabled")
	}
	if got.String() != want.String() {
		t.Fatalf("lazy logger wrote\n%s\nwant\n%s", got.String(), want.String())
	}
	if !strings.Contains(got.String(), "run=r1 task=t attempt=2") {
		t.Fatalf("the run's attributes are missing:\n%s", got.String())
	}

	counting := &countingHandler{Handler: slog.NewTextHandler(&bytes.Buffer{}, nil)}
	quiet := lazyWith(slog.New(counting), slog.String("run", "r2"))
	quiet.Debug("below the level")
	if counting.withAttrs != 0 {
		t.Fatalf("the attributes were handed over %d times for a run that logged nothing", counting.withAttrs)
	}
	quiet.Info("now")
	quiet.Info("again")
	if counting.withAttrs != 1 {
		t.Fatalf("the attributes were handed over %d times, want once", counting.withAttrs)
	}
}

type countingHandler struct {
	slog.Handler
	withAttrs int
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.withAttrs++
	return h.Handler.WithAttrs(as)
}
