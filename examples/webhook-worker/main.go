// Command webhook-worker runs the handle-webhook task of package
// examples/webhooks: copy it as the start of a webhook consumer.
//
//	go run ./examples/webhook-worker -redis redis://127.0.0.1:6379/0
//
// Then push the same delivery twice; the second event is deduplicated to
// the first run:
//
//	taskq events push webhook.received --data '{"id":"evt_1","type":"payment.succeeded"}'
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/taskq/taskq/examples/webhooks"
	"github.com/taskq/taskq/pkg/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-worker:", err)
		os.Exit(1)
	}
}

func run() error {
	redisURL := redisFlag(flag.CommandLine)
	namespace := flag.String("namespace", os.Getenv("TASKQ_NAMESPACE"), "taskq namespace (default \"default\")")
	concurrency := flag.Int("concurrency", 20, "deliveries handled at once")
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
	if err := webhooks.Register(w); err != nil {
		return err
	}
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
