package worker_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/finished"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// slotCheck is a go-redis hook that checks that every command it sees
// touches keys of one Redis Cluster slot, as a cluster would require:
// every script call's KEYS, a multi-key command's keys, the streams of
// one XREADGROUP, and the keys of all the commands of one MULTI/EXEC.
// Pipelines of single-slot commands may span slots (a cluster client
// splits them), so each of their commands is checked on its own.
type slotCheck struct {
	mu      sync.Mutex
	scripts int // script calls seen
	multi   int // calls of several keys seen, scripts included
	bad     []string
}

func (s *slotCheck) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *slotCheck) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.check([]redis.Cmder{cmd}, false)
		return next(ctx, cmd)
	}
}

func (s *slotCheck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		tx := len(cmds) > 0 && strings.EqualFold(cmds[0].Name(), "multi")
		s.check(cmds, tx)
		return next(ctx, cmds)
	}
}

// check checks each command of cmds, or, in a transaction, all of them
// together.
func (s *slotCheck) check(cmds []redis.Cmder, tx bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var txKeys []string
	for _, cmd := range cmds {
		keys, script := commandKeys(cmd)
		if script {
			s.scripts++
		}
		if tx {
			txKeys = append(txKeys, keys...)
			continue
		}
		s.same(cmd.Name(), keys)
	}
	if tx {
		s.same("MULTI/EXEC", txKeys)
	}
}

func (s *slotCheck) same(what string, keys []string) {
	if len(keys) < 2 {
		return
	}
	s.multi++
	slot := redispeek.Slot(keys[0])
	for _, k := range keys[1:] {
		if redispeek.Slot(k) != slot {
			s.bad = append(s.bad, fmt.Sprintf("%s: %s (slot %d) and %s (slot %d)", what, keys[0], slot, k, redispeek.Slot(k)))
			return
		}
	}
}

// commandKeys returns the keys a command touches, for the commands taskq
// sends that can take more than one; script says it is EVAL or EVALSHA.
func commandKeys(cmd redis.Cmder) (keys []string, script bool) {
	args := cmd.Args()
	str := func(i int) string { v, _ := args[i].(string); return v }
	switch strings.ToLower(cmd.Name()) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
		n, _ := strconv.Atoi(fmt.Sprint(args[2]))
		for i := 3; i < 3+n && i < len(args); i++ {
			keys = append(keys, str(i))
		}
		return keys, true
	case "xread", "xreadgroup":
		for i := range args {
			if strings.EqualFold(str(i), "streams") {
				rest := args[i+1:]
				for j := 0; j < len(rest)/2; j++ {
					keys = append(keys, fmt.Sprint(rest[j]))
				}
				break
			}
		}
	case "exists", "del", "unlink", "mget", "touch", "watch":
		for i := 1; i < len(args); i++ {
			keys = append(keys, str(i))
		}
	case "multi", "exec":
	default:
		if len(args) > 1 {
			keys = []string{fmt.Sprint(args[1])}
		}
	}
	return keys, false
}

// The main flows of a namespace of 4 partitions on real Redis — triggers
// single and batched, collisions and each conflict policy, workers
// running, retrying, heartbeating, cancelled and superseded runs, signals,
// steps, waiters, the Inspector's listings and actions, presence, sweeps,
// a shutdown that gives a run back — make no call that touches two slots:
// on a Redis Cluster none would fail with CROSSSLOT.
func TestNoCallSpansTwoSlots(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		hook := &slotCheck{}
		rdb := b.NewClient(t)
		rdb.AddHook(hook)
		ctx := context.Background()
		c, err := client.New(client.Options{Redis: rdb, Namespace: b.Namespace, Partitions: 4, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })

		keyed := task.Must[in, out]("keyed", task.Options{Idempotency: task.Status(`input.id`, time.Hour), Retries: 2,
			Backoff: task.Backoff{Initial: 10 * time.Millisecond, Factor: 1}, OnEvents: []string{"order.paid"}})
		plain := task.Must[in, out]("plain", task.Options{Retries: 2, Backoff: task.Backoff{Initial: 10 * time.Millisecond, Factor: 1}})
		debounced := task.Must[in, out]("debounced", task.Options{Idempotency: task.Debounce(`input.id`, 50*time.Millisecond)})
		ttl := task.Must[in, out]("ttl", task.Options{Idempotency: task.TTL(`"ttl:" + input.id`, time.Hour), OnEvents: []string{"order.paid"}})
		var failedOnce sync.Map
		handle := func(ctx worker.Context, x in) (out, error) {
			switch x.Mode {
			case "fail-once":
				if _, again := failedOnce.LoadOrStore(ctx.RunID(), true); !again {
					return out{}, errors.New("transient")
				}
			case "signal":
				if _, err := ctx.NextSignal(); err != nil {
					return out{}, err
				}
			case "block":
				<-ctx.Done()
				return out{}, context.Cause(ctx)
			}
			step, err := worker.Step(ctx, "s", func(context.Context, string) (string, error) { return ctx.StepID(), nil })
			return out{ID: x.ID, StepID: step}, err
		}
		w := startWorker(t, &redistest.Backend{Name: b.Name, Client: rdb, Namespace: b.Namespace}, worker.Options{
			Concurrency: 8, LeaseDuration: 600 * time.Millisecond, SweepInterval: 100 * time.Millisecond,
		}, func(w *worker.Worker) {
			worker.Handle(w, keyed, handle)
			worker.Handle(w, plain, handle)
			worker.Handle(w, debounced, handle)
			worker.Handle(w, ttl, handle)
		})

		// Batched and single triggers, with and without keys, waited for.
		var ins []in
		for i := range 24 {
			ins = append(ins, in{ID: fmt.Sprint("b", i)})
		}
		ins[3].Mode, ins[7].Mode = "fail-once", "fail-once"
		refs, err := client.RunMany(ctx, c, keyed, ins)
		if err != nil {
			t.Fatal(err)
		}
		plainRefs, err := client.RunMany(ctx, c, plain, ins[:12])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append(refs, plainRefs...) {
			if _, err := r.Result(ctx); err != nil {
				t.Fatalf("run %s: %v", r.ID(), err)
			}
		}
		if r, err := client.Run(ctx, c, plain, in{ID: "one"}); err != nil || r.ID != "one" {
			t.Fatalf("Run: %+v, %v", r, err)
		}

		// Collisions and the conflict policies.
		blocked, err := client.RunNoWait(ctx, c, keyed, in{ID: "held", Mode: "block"})
		if err != nil {
			t.Fatal(err)
		}
		var coll *client.IdempotencyCollisionError
		if _, err := client.RunNoWait(ctx, c, keyed, in{ID: "held"}); !errors.As(err, &coll) || coll.ExistingRunID != blocked.ID() {
			t.Fatalf("duplicate: %v", err)
		}
		if _, err := coll.Owner.Get(ctx); err != nil {
			t.Fatal(err)
		}
		if att, err := client.RunNoWait(ctx, c, keyed, in{ID: "held"}, client.OnConflict(task.ConflictAttach)); err != nil || att.ID() != blocked.ID() {
			t.Fatalf("attach: %v", err)
		}
		sup, err := client.RunNoWait(ctx, c, keyed, in{ID: "held", Mode: "signal"}, client.OnConflict(task.ConflictSupersede))
		if err != nil || sup.TriggerInfo().Superseded != blocked.ID() {
			t.Fatalf("supersede: %v", err)
		}
		if _, err := blocked.Result(ctx); !errors.Is(err, task.ErrRunCancelled) {
			t.Fatalf("superseded run: %v", err)
		}
		if _, err := client.RunNoWait(ctx, c, keyed, in{ID: "held"}, client.OnConflict(task.ConflictSignal)); err != nil {
			t.Fatalf("signal policy: %v", err)
		}
		if _, err := sup.Result(ctx); err != nil {
			t.Fatalf("signalled run: %v", err)
		}
		sig, err := client.RunNoWait(ctx, c, keyed, in{ID: "sig", Mode: "signal"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Signal(ctx, "sig", map[string]int{"n": 1}); err != nil {
			t.Fatalf("signal by key: %v", err)
		}
		if _, err := sig.Result(ctx); err != nil {
			t.Fatal(err)
		}
		sig2, err := client.RunNoWait(ctx, c, plain, in{ID: "sig2", Mode: "signal"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sig2.Signal(ctx, "hi"); err != nil {
			t.Fatalf("signal by run: %v", err)
		}
		if _, err := sig2.Result(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := client.RunNoWait(ctx, c, debounced, in{ID: "d"}); err != nil {
				t.Fatalf("debounce: %v", err)
			}
		}

		// Cancel a running run, with heartbeats renewing its lease meanwhile.
		long, err := client.RunNoWait(ctx, c, plain, in{ID: "long", Mode: "block"})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the long run to start", func() bool { s, _ := runStatus(ctx, long); return s == client.StatusRunning })
		time.Sleep(500 * time.Millisecond) // heartbeats
		if st, err := long.Cancel(ctx); err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel: %s, %v", st, err)
		}

		// The Inspector.
		insp := c.Inspector()
		seen := map[string]bool{}
		for o := (client.ListOptions{Limit: 7}); ; {
			page, err := insp.ListRuns(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Items {
				seen[r.ID] = true
			}
			if o.Cursor = page.NextCursor; o.Cursor == "" {
				break
			}
		}
		if len(seen) < 40 {
			t.Fatalf("listed %d runs", len(seen))
		}
		if _, err := insp.ListRuns(ctx, client.ListOptions{Task: "keyed", Status: client.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		if _, err := insp.ListRuns(ctx, client.ListOptions{Limit: 5}); err != nil {
			t.Fatal(err)
		}
		for o := (client.ListOptions{Limit: 10}); ; {
			page, err := insp.ListKeys(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if o.Cursor = page.NextCursor; o.Cursor == "" {
				break
			}
		}
		held, err := client.RunNoWait(ctx, c, ttl, in{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if k, err := insp.GetKey(ctx, "ttl:1"); err != nil || k.OwnerRunID != held.ID() {
			t.Fatalf("GetKey: %+v, %v", k, err)
		}
		if owner, err := insp.ReleaseKey(ctx, "ttl:1", held.ID()); err != nil || owner != held.ID() {
			t.Fatalf("ReleaseKey: %s, %v", owner, err)
		}
		if _, err := insp.GetRun(ctx, refs[2].ID()); err != nil {
			t.Fatal(err)
		}
		if _, err := insp.ListEvents(ctx, client.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := insp.ListTasks(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := insp.ListWorkers(ctx); err != nil {
			t.Fatal(err)
		}
		f := finished.Subscribe(ctx, c)
		if err := f.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		// An event whose runs may live in other partitions than its own (in
		// steps when they do), and a recovery pass over every partition.
		ing, err := events.New(c, events.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ing.Push(ctx, "order.paid", []byte(`{"id":"e1"}`), nil)
		if err != nil || len(ev.Runs) != 2 || ev.Runs[0].Outcome != events.OutcomeCreated || ev.Runs[1].Outcome != events.OutcomeCreated {
			t.Fatalf("push: %+v, %v", ev, err)
		}
		if _, err := c.Inspector().GetEvent(ctx, ev.ID); err != nil {
			t.Fatal(err)
		}

		// A shutdown gives a running run back to its queue.
		if _, err := client.RunNoWait(ctx, c, plain, in{ID: "given-back", Mode: "block"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		hook.mu.Lock()
		defer hook.mu.Unlock()
		if len(hook.bad) > 0 {
			t.Fatalf("%d calls touch two slots:\n%s", len(hook.bad), strings.Join(hook.bad, "\n"))
		}
		if hook.scripts < 50 || hook.multi < 50 {
			t.Fatalf("only %d script calls and %d calls of several keys seen", hook.scripts, hook.multi)
		}
		t.Logf("%d script calls, %d calls of several keys, every one in one slot", hook.scripts, hook.multi)
	})
}

// The check itself sees a call across slots: a script's KEYS, a
// multi-key command, an XREADGROUP's streams, a transaction's commands.
func TestSlotCheckSeesCallsAcrossSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, other := "taskq:{ns}:run:a", "taskq:{ns#1}:run:a"
	for _, tc := range []struct {
		name string
		cmds []redis.Cmder
		tx   bool
	}{
		{"script", []redis.Cmder{redis.NewCmd(ctx, "evalsha", "f00", 2, one, other, "arg")}, false},
		{"multi-key", []redis.Cmder{redis.NewIntCmd(ctx, "exists", one, other)}, false},
		{"streams", []redis.Cmder{redis.NewXStreamSliceCmd(ctx, "xreadgroup", "group", "g", "c", "streams", one, other, ">", ">")}, false},
		{"transaction", []redis.Cmder{redis.NewStatusCmd(ctx, "multi"), redis.NewIntCmd(ctx, "del", one),
			redis.NewIntCmd(ctx, "del", other), redis.NewSliceCmd(ctx, "exec")}, true},
	} {
		s := &slotCheck{}
		s.check(tc.cmds, tc.tx)
		if len(s.bad) != 1 {
			t.Errorf("%s across slots: %d found", tc.name, len(s.bad))
		}
	}
	s := &slotCheck{}
	s.check([]redis.Cmder{redis.NewCmd(ctx, "evalsha", "f00", 2, one, "taskq:{ns}:retry"), redis.NewIntCmd(ctx, "del", other)}, false)
	if len(s.bad) != 0 || s.scripts != 1 {
		t.Errorf("a pipeline of single-slot calls: %v, %d scripts", s.bad, s.scripts)
	}
}
