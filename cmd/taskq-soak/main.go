// Command taskq-soak runs taskq for minutes under mixed load (unique and
// duplicate keys, both strategies, retries, cancels) while it kills and
// pauses workers, cuts client connections and restarts Redis, on a
// redis-server of its own on loopback. It then checks the recorded history
// and prints a report; it exits 1 if a run was lost, a rule was broken or
// Redis did not return to its baseline after retention.
//
//	taskq-soak -duration 2m -clients 4 -workers 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/soak"
)

// quietLog drops go-redis's own log lines (a redial per connection while
// Redis is down on purpose would drown the report).
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietLog{})
	// Worker processes are this program started again.
	faulttest.MaybeRunRole()

	var o soak.Options
	flag.DurationVar(&o.Duration, "duration", 0, "how long to load (default 2m)")
	flag.IntVar(&o.MaxTriggers, "max-triggers", 0, "stop the load after this many triggers (default 200000)")
	flag.IntVar(&o.Clients, "clients", 0, "triggering goroutines (default 4)")
	flag.IntVar(&o.Workers, "workers", 0, "worker processes (default 3)")
	flag.IntVar(&o.SharedKeys, "shared-keys", 0, "keys duplicates are drawn from (default 64)")
	flag.DurationVar(&o.Retention, "retention", 0, "retention of run records (default 5s)")
	flag.DurationVar(&o.FaultEvery, "fault-every", 0, "time between faults (default 5s; negative for none)")
	flag.StringVar(&o.Dir, "dir", "", "keep Redis data and the history here (default a temporary directory)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := soak.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskq-soak:", err)
		os.Exit(2)
	}
	rep.Write(os.Stdout)
	if !rep.OK() {
		os.Exit(1)
	}
}
