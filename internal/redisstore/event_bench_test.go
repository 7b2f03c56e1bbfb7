package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// eventPush describes the n-th event of a benchmark: tasks subscribed
// tasks, each with a key of its own (every push creates a run per task).
func eventPush(n, tasks int, now time.Time) *engine.PushEventParams {
	p := &engine.PushEventParams{
		ID: fmt.Sprintf("ev-%08d", n), Key: "order.paid", Payload: []byte(`{"id":"` + fmt.Sprint(n) + `"}`),
		Meta: []byte(`{}`), Now: now, Retention: time.Hour,
	}
	for i := 0; i < tasks; i++ {
		task := fmt.Sprintf("task-%d", i)
		p.Tasks = append(p.Tasks, engine.EventTask{Run: &engine.EnqueueParams{
			RunID: fmt.Sprintf("run-%08d-%d", n, i), Task: task, Input: p.Payload, Meta: p.Meta,
			Key: fmt.Sprintf("%s:%d", task, n), Strategy: engine.StrategyStatus, Hold: time.Hour,
			MaxDeliveries: 10, Retention: time.Hour, Now: now,
		}})
	}
	return p
}

// BenchmarkPushEvent pushes events with 1 and 3 subscribed tasks, one at a
// time, on the real Redis the tests share: the round trips and the
// server's work of one push, at once (as in a namespace of one partition)
// and in steps (as for an event whose runs live in other partitions).
func BenchmarkPushEvent(b *testing.B) {
	for _, steps := range []bool{false, true} {
		for _, tasks := range []int{1, 3} {
			name := fmt.Sprintf("at-once/tasks=%d", tasks)
			if steps {
				name = fmt.Sprintf("in-steps/tasks=%d", tasks)
			}
			b.Run(name, func(b *testing.B) {
				be := redistest.Real(b)
				s := redisstore.New(be.Client, be.Namespace)
				s.SetFanoutHooks(&engine.FanoutHooks{Steps: steps})
				ctx, now := context.Background(), time.Now()
				if _, err := s.PushEvent(ctx, eventPush(-1, tasks, now)); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.PushEvent(ctx, eventPush(i, tasks, now)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
