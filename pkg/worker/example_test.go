package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Greeting is a task's input; the client that triggers it and the worker
// that handles it share the definition.
type Greeting struct {
	Name string `json:"name"`
}

var greet = task.Must[Greeting, string]("examples.greet", task.Options{
	Idempotency: task.TTL(`"greet:" + input.name`, time.Minute),
	Timeout:     10 * time.Second,
})

// A worker binary: New connects, Handle registers a typed handler for a
// task, and Run works runs until its context ends (or the process gets
// SIGINT or SIGTERM), then shuts down gracefully.
func Example() {
	m, err := miniredis.Run() // an embedded Redis; in production, your Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	url := "redis://" + m.Addr() + "/0"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	w, err := worker.New(worker.Options{RedisURL: url, Concurrency: 4, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = worker.Handle(w, greet, func(ctx worker.Context, g Greeting) (string, error) {
		return "hello, " + strings.ToUpper(g.Name[:1]) + g.Name[1:], nil
	})
	if err != nil {
		fmt.Println(err) // the task was registered twice, or after Start
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// Elsewhere, a client triggers the task and waits for its result.
	c, err := client.New(client.Options{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	out, err := client.Run(ctx, c, greet, Greeting{Name: "ada"})
	fmt.Println(out, err)

	stop()
	fmt.Println("worker stopped:", <-done)
	// Output:
	// hello, Ada <nil>
	// worker stopped: <nil>
}
