package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"

	"example.com/app/payments"
)

// The README's example, as a newcomer copies it: a worker handling
// orders.Charge and a trigger waiting for its result, on an embedded Redis.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	_ = os.Setenv("TASKQ_REDIS_URL", "redis://"+m.Addr()+"/0")
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	worked := make(chan error, 1)
	go func() { worked <- work(ctx) }()

	if err := trigger(ctx); err != nil {
		fmt.Println("trigger:", err)
	}
	cancel()
	if err := <-worked; err != nil {
		fmt.Println("worker:", err)
	}
	fmt.Println("charges made:", payments.Count())
	// Output:
	// charged: ch-A-1
	// charges made: 1
}
