// Package redislog routes go-redis's own log lines (a failed dial, a pool
// error) into the slog.Logger a taskq client or worker was given, so that
// a program logging JSON keeps every line JSON.
//
// go-redis has one logger for the whole process (redis.SetLogger), which
// by default writes plain lines to stderr. Route installs, once per
// process, an adapter that hands each line to the logger registered most
// recently by a client or worker that is still open and takes warnings
// (slog.Default once none is): one process-wide sink, as go-redis has, fed by the loggers the
// program gave taskq. Leave makes taskq keep its hands off go-redis's
// logger for the rest of the process, for a program that installs its own.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Component is the value of the "component" attribute of every line.
const Component = "go-redis"

var (
	left      atomic.Bool
	installed atomic.Bool

	mu sync.Mutex
	// loggers are the loggers registered and not yet released, oldest
	// first; the last one gets the lines.
	loggers []*entry
)

type entry struct{ log *slog.Logger }

// Leave says the program manages go-redis's logger itself: Route no longer
// installs the adapter. An adapter installed before stays installed; call
// Leave before the first client or worker is made, or call
// redis.SetLogger again after.
func Leave() { left.Store(true) }

// Route registers log as a destination of go-redis's lines and installs
// the adapter the first time, unless Leave was called. release removes log
// again (the client or worker closed); it is safe to call twice.
func Route(log *slog.Logger) (release func()) {
	if log == nil || left.Load() {
		return func() {}
	}
	e := &entry{log: log}
	mu.Lock()
	loggers = append(loggers, e)
	mu.Unlock()
	if installed.CompareAndSwap(false, true) {
		redis.SetLogger(adapter{})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			for i, x := range loggers {
				if x == e {
					loggers = append(loggers[:i], loggers[i+1:]...)
					return
				}
			}
		})
	}
}

// current is the logger that gets the next line: the newest one that
// takes warnings (a client a worker keeps quiet for its own use, say,
// takes none), else the newest, which drops it.
func current(ctx context.Context) *slog.Logger {
	mu.Lock()
	defer mu.Unlock()
	for i := len(loggers) - 1; i >= 0; i-- {
		if loggers[i].log.Enabled(ctx, slog.LevelWarn) {
			return loggers[i].log
		}
	}
	if n := len(loggers); n > 0 {
		return loggers[n-1].log
	}
	return slog.Default()
}

// adapter is the go-redis logger Route installs.
type adapter struct{}

// Printf logs one go-redis line as a warning: go-redis logs only what went
// wrong (dials that failed, connections it dropped, a cluster it could not
// reach). The attributes say it is go-redis's ("component") and where in
// go-redis it was logged ("source": file:line, as go-redis's own lines
// show it).
func (adapter) Printf(ctx context.Context, format string, v ...any) {
	log := current(ctx)
	if !log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	attrs := []slog.Attr{slog.String("component", Component)}
	// 0 is Printf, 1 go-redis's forwarding logger, 2 the line that logged.
	if _, file, line, ok := runtime.Caller(2); ok {
		attrs = append(attrs, slog.String("source", fmt.Sprintf("%s:%d", filepath.Base(file), line)))
	}
	log.LogAttrs(ctx, slog.LevelWarn, "go-redis: "+msg, attrs...)
}
