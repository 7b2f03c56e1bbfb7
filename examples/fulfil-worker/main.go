// Command fulfil-worker runs the workflow of package examples/fulfil: an
// order's run reserves its stock, charges its card and packs its parcel,
// then ships it, each a node of a DAG (see docs/workflows.md).
//
//	go run ./examples/fulfil-worker -redis redis://127.0.0.1:6379/0
//
// Then fulfil an order, and one whose charge is declined, and look at
// their DAGs (or on the dashboard's run page):
//
//	taskq runs trigger fulfil --input '{"id":"o-1","sku":"mug","amount":1200}'
//	taskq events push order.placed --data '{"id":"o-2","sku":"lamp","amount":99900}'
//	taskq runs get <run id>
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/taskq/taskq/examples/fulfil"
	"github.com/taskq/taskq/pkg/worker"
)

func main() {
	redisURL := flag.String("redis", "", "Redis URL (default $TASKQ_REDIS_URL, then redis://127.0.0.1:6379/0)")
	namespace := flag.String("namespace", os.Getenv("TASKQ_NAMESPACE"), "taskq namespace (default \"default\")")
	concurrency := flag.Int("concurrency", 4, "handlers run at once: a workflow waiting for its nodes holds none")
	delay := flag.Duration("delay", 500*time.Millisecond, "simulated time each node takes")
	limit := flag.Int("limit", 50000, "charges above this many cents are declined")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := worker.New(worker.Options{RedisURL: *redisURL, Namespace: *namespace, Concurrency: *concurrency, Logger: log})
	if err == nil {
		err = fulfil.Register(w, fulfil.Handler{Delay: *delay, Limit: *limit, Released: func(o fulfil.Order) {
			log.Info("reservation released", "order", o.ID)
		}})
	}
	if err == nil {
		err = w.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fulfil-worker:", err)
		os.Exit(1)
	}
}
