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
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := worker.New(worker.Options{
		RedisURL: *redisURL, Namespace: *namespace, Concurrency: *concurrency, Logger: log,
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
