package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// refusalServers is a private master and its read-only replica, for
// injecting the three ways Redis refuses a script's write: OOM (maxmemory
// lowered below what the master uses), READONLY (the replica), and
// WRONGTYPE (a key replaced by one of another type).
type refusalServers struct {
	master, replica *redis.Client
}

func startRefusalServers(t *testing.T) *refusalServers {
	t.Helper()
	m := redistest.StartServer(t, "--repl-diskless-sync-delay", "0", "--maxmemory-policy", "noeviction")
	r := redistest.StartReplica(t, m)
	s := &refusalServers{
		master: redis.NewClient(&redis.Options{Addr: m.Addr()}),
		// go-redis sends a command refused with READONLY again, after a
		// pause, as it does after a failover; once is enough here.
		replica: redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1}),
	}
	t.Cleanup(func() { s.master.Close(); s.replica.Close() })
	return s
}

// atLimit sets the master's maxmemory to one byte, so that it is out of
// memory for as long as fn runs.
func (s *refusalServers) atLimit(t *testing.T, fn func()) {
	t.Helper()
	ctx := context.Background()
	if err := s.master.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.master.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
			t.Fatal(err)
		}
	}()
	fn()
}

// synced waits until the replica holds everything written to the master.
func (s *refusalServers) synced(t *testing.T) {
	t.Helper()
	if n, err := s.master.Do(context.Background(), "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica = %d, %v", n, err)
	}
}

// dump maps every key of namespace ns on rdb to its serialized value, so
// that two dumps differ if anything was written in between.
func dump(t *testing.T, rdb *redis.Client, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "taskq:{"+ns+"}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		v, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl := rdb.PTTL(ctx, k).Val() > 0
		m[k] = fmt.Sprintf("%x ttl=%v", v, ttl)
	}
	return m
}

func sameDump(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// prepared is the state a script case sets up and what to do on it.
type prepared struct {
	// call runs the script through the store s.
	call func(s *redisstore.Store) error
	// wrong is the key the script reads first, replaced by a value of
	// another type for the WRONGTYPE injection.
	wrong string
	// done reports, on the master, whether the call did its work.
	done func() bool
}

// scriptCase is one script of lua/ and whether Redis runs it at maxmemory.
type scriptCase struct {
	script string
	// runsAtLimit: the script ends or advances runs already accepted, or
	// only frees memory, so Redis runs it at maxmemory; otherwise it is
	// refused there with OOM and writes nothing.
	runsAtLimit bool
	setup       func(f *fixture) prepared
}

// delivered enqueues p and reads its delivery for consumer w.
func (f *fixture) delivered(p *engine.EnqueueParams) engine.Delivery {
	f.t.Helper()
	f.enqueue(p)
	ds := f.read(p.Task, "w")
	if len(ds) != 1 {
		f.t.Fatalf("read %d deliveries, want 1", len(ds))
	}
	return ds[0]
}

func (f *fixture) status(runID string) string {
	return f.b.Client.HGet(f.ctx, f.k.Run(runID), "status").Val()
}

var scriptCases = []scriptCase{
	{"enqueue", false, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		return prepared{
			call: func(s *redisstore.Store) error {
				r, err := s.Enqueue(f.ctx, p)
				if err == nil && !r.Accepted {
					err = fmt.Errorf("not accepted: %+v", r)
				}
				return err
			},
			wrong: f.k.IdempotencyKey("k"),
			done:  func() bool { return f.status(p.RunID) == engine.StatusQueued },
		}
	}},
	{"push_event", false, func(f *fixture) prepared {
		p := f.event("ev-1", "order.paid", f.eventRun("t", "k", engine.StrategyStatus))
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.PushEvent(f.ctx, p)
				return err
			},
			wrong: f.k.Events(),
			done:  func() bool { return f.exists(f.k.Event("ev-1")) },
		}
	}},
	{"store_event", false, func(f *fixture) prepared {
		p := f.event("ev-1", "order.paid", f.eventRun("t", "k", engine.StrategyStatus))
		return prepared{
			call:  func(s *redisstore.Store) error { return s.StoreEventStep(f.ctx, p) },
			wrong: f.k.Events(),
			done: func() bool {
				return f.b.Client.HExists(f.ctx, f.k.Event("ev-1"), "fanout").Val() && f.b.Client.ZCard(f.ctx, f.k.Fanouts()).Val() == 1
			},
		}
	}},
	{"trigger_event", false, func(f *fixture) prepared {
		p := f.event("ev-1", "order.paid", f.eventRun("t", "k", engine.StrategyStatus))
		if err := f.s.StoreEventStep(f.ctx, p); err != nil {
			f.t.Fatal(err)
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				runs, err := s.TriggerEventStep(f.ctx, p)
				if err == nil && runs[0].Outcome != engine.EventRunCreated {
					err = fmt.Errorf("not created: %+v", runs)
				}
				return err
			},
			wrong: f.k.EventTrigger("ev-1", "t"),
			done:  func() bool { return f.status(p.Tasks[0].Run.RunID) == engine.StatusQueued },
		}
	}},
	{"record_event", true, func(f *fixture) prepared {
		p := f.event("ev-1", "order.paid", f.eventRun("t", "k", engine.StrategyStatus))
		if err := f.s.StoreEventStep(f.ctx, p); err != nil {
			f.t.Fatal(err)
		}
		runs, err := f.s.TriggerEventStep(f.ctx, p)
		if err != nil {
			f.t.Fatal(err)
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.RecordEventStep(f.ctx, p, runs)
				return err
			},
			wrong: f.k.Event("ev-1"),
			done: func() bool {
				return !f.b.Client.HExists(f.ctx, f.k.Event("ev-1"), "fanout").Val() && f.b.Client.ZCard(f.ctx, f.k.Fanouts()).Val() == 0
			},
		}
	}},
	{"take_fanouts", true, func(f *fixture) prepared {
		p := f.event("ev-1", "order.paid", f.eventRun("t", "k", engine.StrategyStatus))
		if err := f.s.StoreEventStep(f.ctx, p); err != nil {
			f.t.Fatal(err)
		}
		later := f.now.Add(engine.FanoutGrace)
		return prepared{
			call: func(s *redisstore.Store) error {
				ids, err := s.TakeFanoutsStep(f.ctx, later, later, 10)
				if err == nil && len(ids) != 1 {
					err = fmt.Errorf("took %v", ids)
				}
				return err
			},
			wrong: f.k.Fanouts(),
			done: func() bool {
				return int64(f.b.Client.ZScore(f.ctx, f.k.Fanouts(), "ev-1").Val()) == later.UnixMilli()
			},
		}
	}},
	{"start", true, func(f *fixture) prepared {
		d := f.delivered(f.params("t", "k", engine.StrategyStatus))
		return prepared{
			call: func(s *redisstore.Store) error {
				_, errs := s.StartBatch(f.ctx, "w", f.now, []engine.Delivery{d})
				return errs[0]
			},
			wrong: f.k.Run(d.RunID),
			done:  func() bool { return f.status(d.RunID) == engine.StatusRunning },
		}
	}},
	{"finish", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		st := f.running(p, "w")
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.Finish(f.ctx, &engine.FinishParams{RunID: p.RunID, Attempt: st.Attempt,
					Outcome: engine.OutcomeSucceeded, Payload: []byte(`{"ok":true}`), Now: f.now})
				return err
			},
			wrong: f.k.Run(p.RunID),
			done: func() bool {
				return f.status(p.RunID) == engine.StatusSucceeded && !f.exists(f.k.IdempotencyKey("k"))
			},
		}
	}},
	{"cancel", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.Cancel(f.ctx, p.RunID, "no longer wanted", f.now)
				return err
			},
			wrong: f.k.Run(p.RunID),
			done: func() bool {
				return f.status(p.RunID) == engine.StatusCancelled && !f.exists(f.k.IdempotencyKey("k"))
			},
		}
	}},
	{"heartbeat", true, func(f *fixture) prepared {
		d := f.delivered(f.params("t", "k", engine.StrategyStatus))
		st := f.start(d, "w")
		held := false
		return prepared{
			call: func(s *redisstore.Store) error {
				r, err := s.Heartbeat(f.ctx, "t", "w", []engine.Lease{{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt}})
				held = err == nil && len(r) == 1 && r[0].State == engine.LeaseHeld
				return err
			},
			wrong: f.k.Run(d.RunID),
			done:  func() bool { return held },
		}
	}},
	{"promote", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		st := f.running(p, "w")
		if r := f.finish(p.RunID, st.Attempt, engine.OutcomeRetry, "try again"); !r.Written {
			f.t.Fatalf("retry not written: %+v", r)
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.Promote(f.ctx, 0, f.now.Add(time.Second), 10)
				return err
			},
			wrong: f.k.Retry(),
			done: func() bool {
				return f.b.Client.HGet(f.ctx, f.k.Run(p.RunID), "entry").Val() != "" && f.b.Client.ZCard(f.ctx, f.k.Retry()).Val() == 0
			},
		}
	}},
	{"reschedule", false, func(f *fixture) prepared {
		p := f.scheduledParams("k", engine.StrategyStatus, time.Hour)
		f.enqueue(p)
		due := f.now.Add(2 * time.Hour)
		return prepared{
			call: func(s *redisstore.Store) error {
				r, err := s.Reschedule(f.ctx, p.RunID, due)
				if err == nil && !r.Moved {
					err = fmt.Errorf("not moved: %+v", r)
				}
				return err
			},
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.due(p.RunID).UnixMilli() == due.UnixMilli() },
		}
	}},
	{"requeue", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		st := f.running(p, "w")
		return prepared{
			call: func(s *redisstore.Store) error {
				r, err := s.Requeue(f.ctx, p.RunID, "t", st.Attempt)
				if err == nil && !r.Written {
					err = fmt.Errorf("not requeued: %+v", r)
				}
				return err
			},
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.status(p.RunID) == engine.StatusQueued },
		}
	}},
	{"sweep", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		f.b.Client.Del(f.ctx, f.k.Run(p.RunID)) // as if its retention ended
		return prepared{
			call: func(s *redisstore.Store) error {
				_, _, err := s.SweepRuns(f.ctx, 0, f.now.Add(time.Hour), 0, 10)
				return err
			},
			wrong: f.k.Runs(),
			done:  func() bool { return f.b.Client.ZCard(f.ctx, f.k.Runs()).Val() == 0 },
		}
	}},
	{"release", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		return prepared{
			call: func(s *redisstore.Store) error {
				ok, err := s.ReleaseKey(f.ctx, "k", p.RunID)
				if err == nil && !ok {
					err = errors.New("not released")
				}
				return err
			},
			wrong: f.k.IdempotencyKey("k"),
			done:  func() bool { return !f.exists(f.k.IdempotencyKey("k")) },
		}
	}},
	{"link_retry", false, func(f *fixture) prepared {
		of := f.params("t", "k1", engine.StrategyStatus)
		retry := f.params("t", "k2", engine.StrategyStatus)
		f.enqueue(of)
		f.enqueue(retry)
		return prepared{
			call: func(s *redisstore.Store) error {
				existing, err := s.LinkRetry(f.ctx, of.RunID, retry.RunID)
				if err == nil && existing != "" {
					err = fmt.Errorf("link already names %s", existing)
				}
				return err
			},
			wrong: f.k.Run(retry.RunID),
			done: func() bool {
				return f.b.Client.HGet(f.ctx, f.k.Run(retry.RunID), "retryof").Val() == of.RunID &&
					f.b.Client.HGet(f.ctx, f.k.Run(of.RunID), "retried").Val() == retry.RunID
			},
		}
	}},
	{"register", true, func(f *fixture) prepared {
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.RegisterTask(f.ctx, "t", []byte(`{"name":"t"}`), true)
				return err
			},
			wrong: f.k.Tasks(),
			done:  func() bool { return f.b.Client.HExists(f.ctx, f.k.Tasks(), "t").Val() },
		}
	}},
	{"save_schedule", true, func(f *fixture) prepared {
		return prepared{
			call: func(s *redisstore.Store) error {
				_, _, err := s.SaveSchedule(f.ctx, "nightly", []byte(`{"name":"nightly"}`), true, false, f.now)
				return err
			},
			wrong: f.k.Schedule("nightly"),
			done:  func() bool { return f.b.Client.HExists(f.ctx, f.k.Schedule("nightly"), "def").Val() },
		}
	}},
	{"pause_schedule", true, func(f *fixture) prepared {
		f.schedule("nightly")
		return prepared{
			call: func(s *redisstore.Store) error {
				ok, err := s.SetSchedulePaused(f.ctx, "nightly", true, f.now)
				if err == nil && !ok {
					err = errors.New("no schedule")
				}
				return err
			},
			wrong: f.k.Schedule("nightly"),
			done:  func() bool { return f.b.Client.HGet(f.ctx, f.k.Schedule("nightly"), "paused").Val() == "1" },
		}
	}},
	{"delete_schedule", true, func(f *fixture) prepared {
		f.schedule("nightly")
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.DeleteSchedule(f.ctx, "nightly")
				return err
			},
			wrong: f.k.Schedules(),
			done: func() bool {
				return f.b.Client.Exists(f.ctx, f.k.Schedule("nightly")).Val() == 0 &&
					!f.b.Client.SIsMember(f.ctx, f.k.Schedules(), "nightly").Val()
			},
		}
	}},
	{"advance_schedule", true, func(f *fixture) prepared {
		f.schedule("nightly")
		tick := f.now.Add(time.Minute)
		return prepared{
			call: func(s *redisstore.Store) error {
				_, _, err := s.AdvanceSchedule(f.ctx, "nightly", tick)
				return err
			},
			wrong: f.k.Schedule("nightly"),
			done: func() bool {
				return f.b.Client.HGet(f.ctx, f.k.Schedule("nightly"), "cursor").Val() == strconv.FormatInt(tick.UnixMilli(), 10)
			},
		}
	}},
	{"signal", false, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		return prepared{
			call: func(s *redisstore.Store) error {
				r, err := s.SignalKey(f.ctx, "k", "sig-1", []byte(`{"n":1}`), 0)
				if err == nil && !r.Delivered {
					err = fmt.Errorf("not delivered: %+v", r)
				}
				return err
			},
			wrong: f.k.IdempotencyKey("k"),
			done:  func() bool { return f.b.Client.XLen(f.ctx, f.k.Signals(p.RunID)).Val() == 1 },
		}
	}},
	{"wake", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		st := f.running(p, "w")
		f.finish(p.RunID, st.Attempt, engine.OutcomeWait, engine.WaitEventPrefix+" k")
		return prepared{
			call:  func(s *redisstore.Store) error { return s.WakeRuns(f.ctx, []string{p.RunID}) },
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.b.Client.HGet(f.ctx, f.k.Run(p.RunID), "status").Val() == "queued" },
		}
	}},
	{"forget_waiters", true, func(f *fixture) prepared {
		if err := f.s.AddEventWaiter(f.ctx, "k", "r1", f.now); err != nil {
			f.t.Fatal(err)
		}
		ws, err := f.s.EventWaiters(f.ctx, []string{"k"})
		if err != nil || len(ws) != 1 {
			f.t.Fatalf("waiters %v, %v", ws, err)
		}
		return prepared{
			call:  func(s *redisstore.Store) error { return s.ForgetEventWaiters(f.ctx, ws) },
			wrong: f.k.EventWaiters("k"),
			done:  func() bool { return f.b.Client.Exists(f.ctx, f.k.EventWaiters("k"), f.k.EventWaits()).Val() == 0 },
		}
	}},
	{"save_step", false, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.running(p, "w")
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.SaveStepResult(f.ctx, p.RunID, "charge", []byte(`"ch_1"`))
				return err
			},
			wrong: f.k.Steps(p.RunID),
			done:  func() bool { return f.b.Client.HExists(f.ctx, f.k.Steps(p.RunID), "charge").Val() },
		}
	}},
	{"record_children", false, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.running(p, "w")
		c := engine.Child{Name: "a", RunID: "child-1", Task: "c", Key: engine.ChildKey(p.RunID, "a", "")}
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.RecordChildren(f.ctx, p.RunID, []engine.Child{c})
				return err
			},
			wrong: f.k.Children(p.RunID),
			done:  func() bool { return f.b.Client.HExists(f.ctx, f.k.Children(p.RunID), "a").Val() },
		}
	}},
	{"take_cascades", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		c := engine.Child{Name: "a", RunID: "child-1", Task: "c", Key: engine.ChildKey(p.RunID, "a", "")}
		if _, err := f.s.RecordChildren(f.ctx, p.RunID, []engine.Child{c}); err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.s.Cancel(f.ctx, p.RunID, "by test", f.now); err != nil {
			f.t.Fatal(err)
		}
		later := f.now.Add(engine.CascadeGrace)
		return prepared{
			call: func(s *redisstore.Store) error {
				ids, err := s.TakeCascadesStep(f.ctx, later, later, 10)
				if err == nil && len(ids) != 1 {
					err = fmt.Errorf("took %v", ids)
				}
				return err
			},
			wrong: f.k.Cascades(),
			done: func() bool {
				return int64(f.b.Client.ZScore(f.ctx, f.k.Cascades(), p.RunID).Val()) == later.UnixMilli()
			},
		}
	}},
	{"ensure_group", true, func(f *fixture) prepared {
		return prepared{
			call:  func(s *redisstore.Store) error { return s.EnsureGroup(f.ctx, "t") },
			wrong: f.k.Stream("t"),
			done: func() bool {
				gs, err := f.b.Client.XInfoGroups(f.ctx, f.k.Stream("t")).Result()
				return err == nil && len(gs) == 1 && gs[0].Name == redisstore.GroupName
			},
		}
	}},
	{"read", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		p.Priority = 2
		f.enqueue(p)
		if err := f.s.EnsureGroup(f.ctx, "t"); err != nil {
			f.t.Fatal(err)
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				ds, _, err := s.ReadByPriority(f.ctx, 0, "w", []string{"t"}, 10, engine.PriorityBound)
				if err == nil && (len(ds) != 1 || ds[0].RunID != p.RunID || ds[0].Priority != 2) {
					err = fmt.Errorf("read %+v, want the run of priority 2", ds)
				}
				return err
			},
			wrong: f.k.Turns(),
			done: func() bool {
				n, err := f.b.Client.XPending(f.ctx, f.k.Lane("t", 2), redisstore.GroupName).Result()
				return err == nil && n.Count == 1
			},
		}
	}},
	{"concurrency_acquire", true, func(f *fixture) prepared {
		return prepared{
			call: func(s *redisstore.Store) error {
				_, errs := s.AcquireSlots(f.ctx, f.now, []engine.AcquireParams{{Task: "t", Group: "g", RunID: "r1", Token: "w",
					MaxRuns: 1, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: f.now}})
				return errs[0]
			},
			wrong: f.k.ConcurrencyHolders("t", "g"),
			done:  func() bool { return f.b.Client.ZCard(f.ctx, f.k.ConcurrencyHolders("t", "g")).Val() == 1 },
		}
	}},
	{"concurrency_release", true, func(f *fixture) prepared {
		if _, errs := f.s.AcquireSlots(f.ctx, f.now, []engine.AcquireParams{{Task: "t", Group: "g", RunID: "r1", Token: "w",
			MaxRuns: 1, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: f.now}}); errs[0] != nil {
			f.t.Fatal(errs[0])
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				_, errs := s.ReleaseSlots(f.ctx, f.now, []engine.ReleaseParams{{Task: "t", Group: "g", RunID: "r1", Token: "w", MaxRuns: 1, Reserve: time.Minute}})
				return errs[0]
			},
			wrong: f.k.ConcurrencyHolders("t", "g"),
			done:  func() bool { return f.b.Client.ZCard(f.ctx, f.k.ConcurrencyHolders("t", "g")).Val() == 0 },
		}
	}},
	{"concurrency_renew", true, func(f *fixture) prepared {
		if _, errs := f.s.AcquireSlots(f.ctx, f.now, []engine.AcquireParams{{Task: "t", Group: "g", RunID: "r1", Token: "w",
			MaxRuns: 1, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: f.now}}); errs[0] != nil {
			f.t.Fatal(errs[0])
		}
		later := f.now.Add(time.Minute)
		return prepared{
			call: func(s *redisstore.Store) error {
				_, errs := s.RenewSlots(f.ctx, f.now, []engine.RenewParams{{Task: "t", Group: "g", RunID: "r1", Token: "w", Lease: 2 * time.Minute}})
				return errs[0]
			},
			wrong: f.k.ConcurrencyHolders("t", "g"),
			done: func() bool {
				return int64(f.b.Client.ZScore(f.ctx, f.k.ConcurrencyHolders("t", "g"), "r1").Val()) > later.UnixMilli()
			},
		}
	}},
	{"concurrency_park", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		d := f.delivered(p)
		return prepared{
			call: func(s *redisstore.Store) error {
				res, errs := s.Park(f.ctx, f.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "full", Group: "g"}})
				if errs[0] == nil && res[0] != engine.ParkHeldBack {
					return fmt.Errorf("not held back: %s", res[0])
				}
				return errs[0]
			},
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.b.Client.ZCard(f.ctx, f.k.Parked()).Val() == 1 },
		}
	}},
	{"concurrency_unpark", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		d := f.delivered(p)
		if _, errs := f.s.Park(f.ctx, f.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "full", Group: "g"}}); errs[0] != nil {
			f.t.Fatal(errs[0])
		}
		return prepared{
			call: func(s *redisstore.Store) error {
				res, errs := s.Unpark(f.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}})
				if errs[0] == nil && res[0] != engine.UnparkQueued {
					return fmt.Errorf("not queued: %s", res[0])
				}
				return errs[0]
			},
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.b.Client.XLen(f.ctx, f.k.Stream("t")).Val() == 1 },
		}
	}},
	{"take_parked", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		d := f.delivered(p)
		if _, errs := f.s.Park(f.ctx, f.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "full", Group: "g"}}); errs[0] != nil {
			f.t.Fatal(errs[0])
		}
		next := f.now.Add(time.Minute)
		return prepared{
			call: func(s *redisstore.Store) error {
				got, err := s.TakeParked(f.ctx, 0, f.now, next, 10)
				if err == nil && len(got) != 1 {
					err = fmt.Errorf("took %v", got)
				}
				return err
			},
			wrong: f.k.Parked(),
			done:  func() bool { return int64(f.b.Client.ZScore(f.ctx, f.k.Parked(), p.RunID).Val()) == next.UnixMilli() },
		}
	}},
	{"watch", true, func(f *fixture) prepared {
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		return prepared{
			call: func(s *redisstore.Store) error {
				_, err := s.WatchRun(f.ctx, p.RunID)
				return err
			},
			wrong: f.k.Run(p.RunID),
			done:  func() bool { return f.b.Client.HGet(f.ctx, f.k.Run(p.RunID), "x").Val() == "w" },
		}
	}},
}

// Every script tells Redis's refusals of its writes apart, and none leaves
// anything half-written: at maxmemory (noeviction) a script that would add
// data is refused with an *OutOfMemoryError while the scripts that end or
// advance runs already accepted, or only free memory, still run; on a
// read-only replica (a demoted master after a failover) every script that
// would write is refused with a *ReadOnlyError; only a key of the wrong
// type is reported as one. Refused calls change no key.
func TestScriptsReportEachRefusalAsWhatItIs(t *testing.T) {
	srv := startRefusalServers(t)
	names := map[string]bool{}
	for _, sc := range redisstore.ScriptNames() {
		names[sc] = true
	}
	for _, sc := range scriptCases {
		delete(names, sc.script)
	}
	if len(names) > 0 {
		t.Fatalf("scripts without a case here: %v", names)
	}
	for _, sc := range scriptCases {
		t.Run(sc.script, func(t *testing.T) {
			newCase := func(t *testing.T) (*fixture, prepared) {
				b := &redistest.Backend{Name: "private", Client: srv.master, Namespace: redistest.Namespace(t)}
				f := newFixture(t, b)
				return f, sc.setup(f)
			}
			t.Run("out of memory", func(t *testing.T) {
				f, p := newCase(t)
				before := dump(t, srv.master, f.b.Namespace)
				var err error
				srv.atLimit(t, func() { err = p.call(f.s) })
				after := dump(t, srv.master, f.b.Namespace)
				if sc.runsAtLimit {
					if err != nil || !p.done() {
						t.Fatalf("at maxmemory: %v (done %v); want it to run: it ends or advances accepted runs, or frees memory", err, p.done())
					}
					return
				}
				var oom *engine.OutOfMemoryError
				if !errors.As(err, &oom) || !errors.Is(err, engine.ErrOutOfMemory) || !errors.Is(err, engine.ErrUnavailable) ||
					errors.Is(err, engine.ErrWrongType) || oom.Script != sc.script || oom.Addr != srv.master.Options().Addr {
					t.Fatalf("at maxmemory: %v; want an *OutOfMemoryError naming %s and the server", err, sc.script)
				}
				if !sameDump(before, after) || p.done() {
					t.Fatalf("a refused call wrote:\n before %v\n after  %v", before, after)
				}
				// Once memory is there again, the same call goes through.
				if err := p.call(f.s); err != nil || !p.done() {
					t.Fatalf("below maxmemory again: %v (done %v)", err, p.done())
				}
			})
			t.Run("read-only replica", func(t *testing.T) {
				f, p := newCase(t)
				srv.synced(t)
				before := dump(t, srv.replica, f.b.Namespace)
				err := p.call(redisstore.New(srv.replica, f.b.Namespace))
				var ro *engine.ReadOnlyError
				if !errors.As(err, &ro) || !errors.Is(err, engine.ErrReadOnly) || !errors.Is(err, engine.ErrUnavailable) ||
					errors.Is(err, engine.ErrWrongType) || ro.Script != sc.script {
					t.Fatalf("on a replica: %v; want a *ReadOnlyError naming %s", err, sc.script)
				}
				if after := dump(t, srv.replica, f.b.Namespace); !sameDump(before, after) {
					t.Fatalf("the replica changed:\n before %v\n after  %v", before, after)
				}
			})
			t.Run("wrong type", func(t *testing.T) {
				f, p := newCase(t)
				// No script uses a list.
				f.b.Client.Del(f.ctx, p.wrong)
				f.b.Client.RPush(f.ctx, p.wrong, "x")
				before := dump(t, srv.master, f.b.Namespace)
				err := p.call(f.s)
				if !errors.Is(err, engine.ErrWrongType) || errors.Is(err, engine.ErrUnavailable) {
					t.Fatalf("with %s of the wrong type: %v; want ErrWrongType", p.wrong, err)
				}
				if after := dump(t, srv.master, f.b.Namespace); !sameDump(before, after) {
					t.Fatalf("a refused call wrote:\n before %v\n after  %v", before, after)
				}
			})
		})
	}
}

// At maxmemory a call of several triggers refuses each one that would
// create a run, and still answers a duplicate with its owner: a collision
// needs no memory.
func TestEnqueueAtMaxmemoryRefusesNewRunsAndAnswersDuplicates(t *testing.T) {
	srv := startRefusalServers(t)
	f := newFixture(t, &redistest.Backend{Name: "private", Client: srv.master, Namespace: redistest.Namespace(t)})
	owner := f.params("t", "held", engine.StrategyStatus)
	f.enqueue(owner)
	ps := []*engine.EnqueueParams{
		f.params("t", "a", engine.StrategyStatus),
		f.params("t", "held", engine.StrategyStatus),
		f.params("t", "b", engine.StrategyTTL),
		f.params("t", "", engine.StrategyNone),
	}
	before := dump(t, srv.master, f.b.Namespace)
	var (
		res  []engine.EnqueueResult
		errs []error
	)
	srv.atLimit(t, func() { res, errs = f.s.EnqueueBatch(f.ctx, ps) })
	for _, i := range []int{0, 2, 3} {
		if !errors.Is(errs[i], engine.ErrOutOfMemory) {
			t.Errorf("trigger %d at maxmemory: %+v, %v; want ErrOutOfMemory", i, res[i], errs[i])
		}
	}
	if errs[1] != nil || res[1].Accepted || res[1].Owner != owner.RunID {
		t.Errorf("duplicate at maxmemory: %+v, %v; want a collision with %s", res[1], errs[1], owner.RunID)
	}
	if after := dump(t, srv.master, f.b.Namespace); !sameDump(before, after) {
		t.Fatalf("refused triggers wrote:\n before %v\n after  %v", before, after)
	}
}

// At maxmemory Redis refuses XGROUP CREATE; EnsureGroup, a script that
// may run there, creates a missing group and finds an existing one, so a
// worker can start and drain runs queued before any worker existed.
func TestEnsureGroupAtMaxmemory(t *testing.T) {
	srv := startRefusalServers(t)
	f := newFixture(t, &redistest.Backend{Name: "private", Client: srv.master, Namespace: redistest.Namespace(t)})
	f.enqueue(f.params("queued", "k", engine.StrategyStatus)) // a stream without a group
	if err := f.s.EnsureGroup(f.ctx, "known"); err != nil {
		t.Fatal(err)
	}
	srv.atLimit(t, func() {
		if err := srv.master.XGroupCreateMkStream(f.ctx, f.k.Stream("queued"), redisstore.GroupName, "0").Err(); !strings.HasPrefix(fmt.Sprint(err), "OOM ") {
			t.Errorf("XGROUP CREATE at maxmemory: %v; want it refused (or this test shows nothing)", err)
		}
		for _, task := range []string{"known", "queued", "new"} {
			if err := f.s.EnsureGroup(f.ctx, task); err != nil {
				t.Errorf("group of %s at maxmemory: %v", task, err)
			}
		}
	})
	if ds := f.read("queued", "w"); len(ds) != 1 {
		t.Fatalf("read %d deliveries of the run queued before its group, want 1", len(ds))
	}
}

// schedule registers a schedule named name, its cursor at f.now.
func (f *fixture) schedule(name string) {
	f.t.Helper()
	if _, _, err := f.s.SaveSchedule(f.ctx, name, []byte(`{"name":"`+name+`"}`), false, false, f.now); err != nil {
		f.t.Fatal(err)
	}
}

// scheduledParams is a status-strategy trigger of task t with key k that
// asks to run in delay.
func (f *fixture) scheduledParams(key string, strat engine.Strategy, delay time.Duration) *engine.EnqueueParams {
	p := f.params("t", key, strat)
	p.Delay = delay
	p.Hold += delay
	return p
}

// due is the score of run id in the retry zset, the zero time when absent.
func (f *fixture) due(id string) time.Time {
	f.t.Helper()
	v, err := f.b.Client.ZScore(f.ctx, f.k.Retry(), id).Result()
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(v))
}
