// Command order-worker runs the process-order task of package
// examples/orders: copy it as the start of a worker of your own.
//
//	go run ./examples/order-worker -redis redis://127.0.0.1:6379/0
//
// Then trigger an order twice; the second is a duplicate:
//
//	taskq runs trigger process-order --input '{"orderId":"1001","amount":4200}'
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/taskq/taskq/examples/orders"
	"github.com/taskq/taskq/pkg/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "order-worker:", err)
		os.Exit(1)
	}
}

func run() error {
	redisURL := redisFlag(flag.CommandLine)
	namespace := flag.String("namespace", os.Getenv("TASKQ_NAMESPACE"), "taskq namespace (default \"default\")")
	concurrency := flag.Int("concurrency", 10, "orders charged at once")
	delay := flag.Duration("delay", 500*time.Millisecond, "simulated payment provider latency")
	httpAddr := flag.String("http", "", "serve /metrics, /healthz and /readyz on this address, e.g. :9090 (default: none)")
	logFormat := flag.String("log-format", "text", "log format: text or json")
	flag.Parse()

	log, err := newLogger(os.Stderr, *logFormat)
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Options{
		RedisURL: *redisURL, Namespace: *namespace, Concurrency: *concurrency, Logger: log, HTTPAddr: *httpAddr,
	})
	if err != nil {
		return err
	}
	if err := orders.Register(w, orders.Handler{Delay: *delay}); err != nil {
		return err
	}
	// Run returns after SIGINT or SIGTERM, once running charges finished
	// or were handed back to the queue.
	return w.Run(context.Background())
}

// redisFlag defines -redis, its default taken from $TASKQ_REDIS_URL and
// shown by -help without its password (redis://:xxxxx@host:6379/0).
func redisFlag(fs *flag.FlagSet) *string {
	env := os.Getenv("TASKQ_REDIS_URL")
	p := fs.String("redis", env, "Redis URL (default $TASKQ_REDIS_URL, then redis://127.0.0.1:6379/0)")
	if u, err := url.Parse(env); err != nil {
		fs.Lookup("redis").DefValue = "$TASKQ_REDIS_URL (not a valid URL)"
	} else {
		fs.Lookup("redis").DefValue = u.Redacted()
	}
	return p
}

// newLogger logs to out as text or as JSON, one object a line.
func newLogger(out io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(out, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(out, nil)), nil
	}
	return nil, fmt.Errorf("-log-format %q: use text or json", format)
}
