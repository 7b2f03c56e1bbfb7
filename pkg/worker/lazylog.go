package worker

import (
	"context"
	"log/slog"
	"sync"
)

// lazyWith is base.With(attrs...) for a logger that most likely logs
// nothing, as a run's logger (see runContext.Logger): the attributes reach
// base's handler (which may format them at once, as slog.TextHandler does)
// only when a record is first handled.
func lazyWith(base *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(&lazyAttrs{h: base.Handler(), attrs: attrs})
}

// lazyAttrs is the slog.Handler behind lazyWith.
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr

	once sync.Once
	with slog.Handler
}

func (l *lazyAttrs) resolved() slog.Handler {
	l.once.Do(func() { l.with = l.h.WithAttrs(l.attrs) })
	return l.with
}

func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return l.resolved().Handle(ctx, r)
}

func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler { return l.resolved().WithAttrs(attrs) }

func (l *lazyAttrs) WithGroup(name string) slog.Handler { return l.resolved().WithGroup(name) }
