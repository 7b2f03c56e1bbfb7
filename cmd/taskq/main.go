// Command taskq is the operator's CLI for taskq: it inspects idempotency
// keys, runs, registered tasks and events, pushes events, evaluates key
// expressions offline, serves the HTTP API and runs a one-command demo
// stack (taskq dev). See docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// build); the version Go records in the binary, when it has one, comes first
// (see buildVersion).
var version = "dev"

func main() {
	// go-redis logs every failed dial on its own; the CLI reports the
	// failure once, as an error, so its chatter is dropped.
	redis.SetLogger(discardLogger{})
	// SIGINT and SIGTERM end the context: serve and dev shut down
	// gracefully, other commands stop what they were doing.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], osStreams(), readVersion(version))
	stop()
	os.Exit(code)
}

// discardLogger drops go-redis's internal log lines.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
