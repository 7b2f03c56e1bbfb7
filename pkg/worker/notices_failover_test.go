package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// failoverBound bounds each wait of the failover tests: the cluster's node
// timeout is 2 s, so a replica is promoted within a few seconds of a kill.
const failoverBound = 20 * time.Second

// awaitFor is receive with the failover bound.
func awaitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failoverBound):
		t.Fatalf("timed out after %s waiting for %s", failoverBound, what)
		var zero T
		return zero
	}
}

// until waits, within the failover bound, until cond holds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failoverBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", failoverBound, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardSubscribers counts the sharded subscribers of ch on the master the
// cluster names for its slot now.
func shardSubscribers(cc *redis.ClusterClient, ch string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m, err := cc.MasterForKey(ctx, ch)
	if err != nil {
		return -1
	}
	n, err := m.PubSubShardNumSub(ctx, ch).Result()
	if err != nil {
		return -1
	}
	return n[ch]
}

// On a Redis Cluster, a worker's cancel notices and a client's waiter
// survive the failover of the master their channels live on: with a run
// running and waited for, and another running, the master of their
// partition is killed and its replica promoted; the worker and the client
// subscribe again on the new master by themselves, a cancel issued then
// reaches the other run's handler (heartbeats are a minute apart, so by
// its notice), and the waiter, blocked throughout, gets its run's result.
func TestNoticesSurviveAMasterFailover(t *testing.T) {
	t.Parallel()
	pc := redistest.StartCluster(t, 3, 1)
	cc := pc.Client(t)
	b := &redistest.Backend{Name: "cluster", Client: cc, Namespace: redistest.Namespace(t), URL: pc.URL()}
	ctx := context.Background()
	const partitions = 3
	c, err := client.New(client.Options{Redis: cc, Namespace: b.Namespace, Partitions: partitions, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	// Two keys of one partition, whose runs and channels share a master.
	const target = 1
	var ids []string
	for i := 0; len(ids) < 2; i++ {
		if id := fmt.Sprintf("f%d", i); engine.KeyPartition(b.Namespace, id, partitions) == target {
			ids = append(ids, id)
		}
	}
	tk := task.Must[in, out]("failover", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
	running := make(chan string, 2)
	release := make(chan struct{})
	causes := make(chan error, 1)
	startWorker(t, b, worker.Options{Partitions: partitions, Concurrency: 4, LeaseDuration: 3 * time.Minute,
		HeartbeatInterval: time.Minute, OperationTimeout: 2 * time.Second}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			running <- x.ID
			if x.ID == ids[0] {
				select {
				case <-release:
					return out{ID: x.ID}, nil
				case <-ctx.Done():
					return out{}, context.Cause(ctx)
				}
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return out{}, context.Cause(ctx)
		})
	})
	waited, err := client.RunNoWait(ctx, c, tk, in{ID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := client.RunNoWait(ctx, c, tk, in{ID: ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	awaitFor(t, "a handler to run", running)
	awaitFor(t, "the other handler to run", running)
	// A handler runs before its attempt is begun in Redis (StartDelay):
	// both must be begun, and so replicated by the WAIT below, before the
	// kill, or the begin sent after it fails and the handler is told its
	// lease is lost, which is not what this test is about.
	until(t, "both attempts to be begun", func() bool {
		for _, h := range []*client.RunHandle{c.Handle(waited.ID()), c.Handle(cancelled.ID())} {
			if st, err := runStatus(ctx, h); err != nil || st != client.StatusRunning {
				return false
			}
		}
		return true
	})
	results := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		got, err := waited.Result(wctx)
		if err == nil && got.ID != ids[0] {
			err = fmt.Errorf("result %+v", got)
		}
		results <- err
	}()

	conn, err := connect.Open(connect.Options{Redis: cc, Namespace: b.Namespace, Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	done, err := conn.Engine.DoneTopic(ctx, waited.ID())
	if err != nil {
		t.Fatal(err)
	}
	topics, err := conn.Engine.CancelTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancels := topics[target]
	until(t, "the waiter's subscription", func() bool { return shardSubscribers(cc, done) == 1 })
	if n := shardSubscribers(cc, cancels); n != 1 {
		t.Fatalf("%d sharded subscribers of %s before the failover, want the worker", n, cancels)
	}
	master, err := cc.MasterForKey(ctx, cancels)
	if err != nil {
		t.Fatal(err)
	}
	// Every write so far on the replica too, so that the promoted one has
	// both runs running.
	var wait *redis.IntCmd
	if _, err := master.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, done+":replicated", "1", time.Minute) // the partition's slot, as the channel
		wait = redis.NewIntCmd(ctx, "wait", 1, 5000)
		return p.Process(ctx, wait)
	}); err != nil || wait.Val() != 1 {
		t.Fatalf("WAIT before the kill: %v, %d replicas", err, wait.Val())
	}
	old := master.Options().Addr
	for _, node := range pc.Nodes {
		if node.Addr() == old {
			node.Kill()
		}
	}
	until(t, "a replica to be promoted", func() bool {
		cc.ReloadState(ctx)
		m, err := cc.MasterForKey(ctx, cancels)
		return err == nil && m.Options().Addr != old && m.Ping(ctx).Err() == nil
	})
	until(t, "the worker and the waiter to subscribe again on the new master", func() bool {
		return shardSubscribers(cc, cancels) == 1 && shardSubscribers(cc, done) == 1
	})

	until(t, "the cancel to be written on the new master", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := cancelled.Cancel(cctx)
		return err == nil && s == client.StatusCancelled
	})
	if cause := awaitFor(t, "the cancelled run's handler to see its cancel", causes); !errors.Is(cause, task.ErrRunCancelled) {
		t.Fatalf("handler context cause = %v, want ErrRunCancelled", cause)
	}
	close(release)
	if err := awaitFor(t, "the waiter's result", results); err != nil {
		t.Fatalf("waiter across the failover: %v", err)
	}
}
