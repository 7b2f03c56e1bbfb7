// Command album-worker runs the tasks of package examples/albums, whose
// album run spawns a child run per photo (see docs/workflows.md).
//
//	go run ./examples/album-worker -redis redis://127.0.0.1:6379/0
//
// Then process an album, and look at its children:
//
//	taskq runs trigger process-album --input '{"albumId":"summer","photos":["beach","dunes"]}'
//	taskq runs get <run id>
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/taskq/taskq/examples/albums"
	"github.com/taskq/taskq/pkg/worker"
)

func main() {
	redisURL := flag.String("redis", "", "Redis URL (default $TASKQ_REDIS_URL, then redis://127.0.0.1:6379/0)")
	namespace := flag.String("namespace", os.Getenv("TASKQ_NAMESPACE"), "taskq namespace (default \"default\")")
	concurrency := flag.Int("concurrency", 20, "handlers run at once: an album's run waits for its thumbnails in a slot of its own")
	delay := flag.Duration("delay", 300*time.Millisecond, "simulated time to make a thumbnail")
	flag.Parse()

	w, err := worker.New(worker.Options{RedisURL: *redisURL, Namespace: *namespace, Concurrency: *concurrency,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err == nil {
		err = albums.Register(w, albums.Handler{Delay: *delay})
	}
	if err == nil {
		err = w.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "album-worker:", err)
		os.Exit(1)
	}
}
