package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// partitionedClient is a client whose namespace has four partitions (16
// on the cluster, several per master), so that most runs live outside the
// home partition.
func partitionedClient(t *testing.T, b *redistest.Backend) *client.Client {
	t.Helper()
	parts := 4
	if b.Name == "cluster" {
		parts = 16
	}
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A scheduled trigger creates its run at once, queued and waiting for its
// due time, with its key claimed: a duplicate is rejected at once naming
// it, and a ttl counts from the due time.
func TestRunInCreatesAScheduledRunThatHoldsItsKey(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		in := c.Inspector()
		tk := task.Must[orderInput, orderResult]("sched-ttl", task.Options{Idempotency: task.TTL(`"sched:" + input.id`, time.Minute)})
		before := time.Now()
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}, client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		info, err := in.GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != client.StatusQueued || !info.Scheduled || info.ScheduledAt == nil ||
			info.ScheduledAt.Before(before.Add(time.Hour).Truncate(time.Millisecond)) || info.ScheduledAt.After(time.Now().Add(time.Hour)) {
			t.Fatalf("scheduled run = %+v (due %v); want queued, scheduled an hour ahead", info, info.ScheduledAt)
		}
		for i, trigger := range []func() error{
			func() error { _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}); return err },
			func() error {
				_, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}, client.RunIn(2*time.Hour))
				return err
			},
		} {
			var coll *client.IdempotencyCollisionError
			if err := trigger(); !errors.As(err, &coll) || coll.ExistingRunID != ref.ID() {
				t.Fatalf("duplicate %d: %v; want a collision naming the scheduled run %s", i, err, ref.ID())
			}
		}
		// The ttl (a minute) counts from the due time, an hour ahead.
		k, err := in.GetKey(ctx, "sched:1")
		if err != nil || k.OwnerRunID != ref.ID() || k.TTL <= time.Hour || k.TTL > time.Hour+time.Minute {
			t.Fatalf("key = %+v, %v; want held by %s for an hour and a minute", k, err, ref.ID())
		}
		// Listed among the queued runs, and alone by the Scheduled filter.
		now, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		page, err := in.ListRuns(ctx, client.ListOptions{Status: client.StatusQueued, Task: "sched-ttl"})
		if err != nil || len(page.Items) != 2 {
			t.Fatalf("queued runs = %+v, %v; want both", page, err)
		}
		page, err = in.ListRuns(ctx, client.ListOptions{Scheduled: true})
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != ref.ID() || !page.Items[0].Scheduled {
			t.Fatalf("scheduled runs = %+v, %v; want only %s, not %s", page, err, ref.ID(), now.ID())
		}
	})
}

// A run scheduled with a status strategy holds its key while it waits, and
// its fallback ttl counts from the due time too.
func TestScheduledStatusRunHoldsItsKeyWhileItWaits(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		tk := task.Must[orderInput, orderResult]("sched-status", task.Options{Idempotency: task.Status(`"st:" + input.id`, time.Minute)})
		at := time.Now().Add(2 * time.Hour)
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}, client.RunAt(at))
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.Inspector().GetKey(ctx, "st:1")
		if err != nil || k.OwnerRunID != ref.ID() || k.OwnerStatus != client.StatusQueued || k.TTL <= 2*time.Hour-time.Minute {
			t.Fatalf("key = %+v, %v; want held by the queued run past its due time", k, err)
		}
	})
}

// The conflict policies meet a scheduled owner as any other: attach
// returns it, supersede cancels it, signal delivers to it.
func TestConflictPoliciesMeetAScheduledOwner(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		in := c.Inspector()
		tk := task.Must[orderInput, orderResult]("sched-policy", task.Options{Idempotency: task.Status(`"pol:" + input.id`, time.Hour)})
		owner := func(id string) *client.RunRef[orderResult] {
			ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: id}, client.RunIn(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}

		a := owner("attach")
		att, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "attach"}, client.OnConflict(task.ConflictAttach))
		if err != nil || att.ID() != a.ID() || att.TriggerInfo().Outcome != client.OutcomeAttached {
			t.Fatalf("attach = %v, %v; want the scheduled run %s", att, err, a.ID())
		}

		s := owner("signal")
		sig, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "signal"}, client.OnConflict(task.ConflictSignal))
		if err != nil || sig.ID() != s.ID() || sig.TriggerInfo().Outcome != client.OutcomeSignalled {
			t.Fatalf("signal = %v, %v; want signalled to the scheduled run %s", sig, err, s.ID())
		}

		old := owner("supersede")
		sup, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "supersede"}, client.OnConflict(task.ConflictSupersede))
		if err != nil || sup.ID() == old.ID() || sup.TriggerInfo().Outcome != client.OutcomeCreated {
			t.Fatalf("supersede = %v, %v; want a new run", sup, err)
		}
		info, err := in.GetRun(ctx, old.ID())
		if err != nil || info.Status != client.StatusCancelled || info.ScheduledAt != nil || info.Scheduled {
			t.Fatalf("superseded scheduled run = %+v, %v; want cancelled and no longer waiting", info, err)
		}
		// A supersede that is itself scheduled takes the key and waits.
		later, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "supersede"}, client.OnConflict(task.ConflictSupersede), client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if info, err := in.GetRun(ctx, later.ID()); err != nil || !info.Scheduled {
			t.Fatalf("scheduled superseding run = %+v, %v", info, err)
		}
		if info, err := in.GetRun(ctx, sup.ID()); err != nil || info.Status != client.StatusCancelled {
			t.Fatalf("superseded run = %+v, %v", info, err)
		}
	})
}

// Cancelling a scheduled run ends it cancelled and, like any cancel under
// the status strategy, frees its key at once; a ttl key stays until it
// expires, as after any cancel.
func TestCancelAScheduledRunReleasesItsKey(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		in := c.Inspector()
		ttl := task.Must[orderInput, orderResult]("sched-cancel-ttl", task.Options{Idempotency: task.TTL(`"ct:" + input.id`, time.Hour)})
		held, err := client.RunNoWait(ctx, c, ttl, orderInput{ID: "1"}, client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Handle(held.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if k, err := in.GetKey(ctx, "ct:1"); err != nil || k.OwnerRunID != held.ID() {
			t.Fatalf("ttl key after cancel = %+v, %v; want still held by the cancelled run", k, err)
		}
		tk := task.Must[orderInput, orderResult]("sched-cancel", task.Options{Idempotency: task.Status(`"c:" + input.id`, time.Hour)})
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}, client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := c.Handle(ref.ID()).Cancel(ctx); err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel = %q, %v", st, err)
		}
		info, err := in.GetRun(ctx, ref.ID())
		if err != nil || info.Status != client.StatusCancelled || info.ScheduledAt != nil {
			t.Fatalf("cancelled run = %+v, %v", info, err)
		}
		var notHeld *client.StateError
		if _, err := in.GetKey(ctx, "c:1"); !(errors.As(err, &notHeld) && notHeld.Kind == client.ErrKeyNotHeld) {
			t.Fatalf("key after cancel: %v; want not held", err)
		}
		if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}); err != nil {
			t.Fatalf("trigger after cancel: %v", err)
		}
	})
}

// Reschedule moves a waiting run earlier or later and refuses one that no
// longer waits.
func TestRescheduleAScheduledRun(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		in := c.Inspector()
		tk := task.Must[orderInput, orderResult]("sched-move", task.Options{Idempotency: task.TTL(`"m:" + input.id`, time.Minute)})
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}, client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(5 * time.Hour).Truncate(time.Millisecond)
		info, err := in.Reschedule(ctx, ref.ID(), later)
		if err != nil || !info.Scheduled || !info.ScheduledAt.Equal(later) {
			t.Fatalf("reschedule later = %+v, %v; want due %v", info, err, later)
		}
		if k, err := in.GetKey(ctx, "m:1"); err != nil || k.TTL <= 5*time.Hour-time.Minute {
			t.Fatalf("key after moving later = %+v, %v; want it to cover the new due time", k, err)
		}
		info, err = in.Reschedule(ctx, ref.ID(), time.Now().Add(10*time.Minute))
		if err != nil || !info.Scheduled || info.ScheduledAt.After(time.Now().Add(10*time.Minute)) {
			t.Fatalf("reschedule earlier = %+v, %v", info, err)
		}
		if k, err := in.GetKey(ctx, "m:1"); err != nil || k.TTL > 11*time.Minute+time.Second {
			t.Fatalf("key after moving earlier = %+v, %v; want ten minutes and the ttl (within the skew of the two clocks)", k, err)
		}
		var se *task.ConfigError
		if _, err := in.Reschedule(ctx, ref.ID(), time.Time{}); !errors.As(err, &se) || se.Field != "runAt" || !errors.Is(err, task.ErrInvalidConfig) {
			t.Fatalf("reschedule to the zero time: %v; want a *task.ConfigError naming runAt", err)
		}
		now, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		var ns *client.StateError
		if _, err := in.Reschedule(ctx, now.ID(), later); !(errors.As(err, &ns) && ns.Kind == client.ErrNotScheduled) || !errors.Is(err, client.ErrNotScheduled) || ns.State != "queued" {
			t.Fatalf("reschedule of an unscheduled run: %v; want a *NotScheduledError, queued", err)
		}
		if _, err := c.Handle(ref.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Reschedule(ctx, ref.ID(), later); !(errors.As(err, &ns) && ns.Kind == client.ErrNotScheduled) || ns.State != "cancelled" {
			t.Fatalf("reschedule of a cancelled run: %v; want a *NotScheduledError, cancelled", err)
		}
		if _, err := in.Reschedule(ctx, "01890000-0000-7000-8000-000000000000", later); !errors.Is(err, client.ErrRunNotFound) {
			t.Fatalf("reschedule of a missing run: %v", err)
		}
	})
}

// Schedules that cannot be met are refused before anything is written,
// with an error naming the field; a time already passed is now.
func TestScheduleValidation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, MaxScheduleAhead: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tk := task.Must[orderInput, orderResult]("sched-check", task.Options{Idempotency: task.TTL(`"v:" + input.id`, time.Minute)})
		deb := task.Must[orderInput, orderResult]("sched-debounce", task.Options{Idempotency: task.Debounce(`"d:" + input.id`, time.Minute)})
		cases := []struct {
			name  string
			tk    *task.Task[orderInput, orderResult]
			opts  []client.RunOption
			field string
			says  string
		}{
			{"negative", tk, []client.RunOption{client.RunIn(-time.Minute)}, "runIn", "runIn: -1m0s must not be negative"},
			{"too far", tk, []client.RunOption{client.RunIn(48 * time.Hour)}, "runIn", "over the limit of 24h0m0s"},
			{"too far at", tk, []client.RunOption{client.RunAt(time.Now().Add(48 * time.Hour))}, "runAt", "over the limit of 24h0m0s"},
			{"zero", tk, []client.RunOption{client.RunAt(time.Time{})}, "runAt", "runAt: must not be the zero time"},
			{"both", tk, []client.RunOption{client.RunAt(time.Now().Add(time.Hour)), client.RunIn(time.Hour)}, "runAt", "runAt: given together with runIn"},
			{"debounce", deb, []client.RunOption{client.RunIn(time.Hour)}, "runIn", `task "sched-debounce": runIn: cannot be set: the task's debounce strategy`},
		}
		for _, tc := range cases {
			_, err := client.RunNoWait(ctx, c, tc.tk, orderInput{ID: tc.name}, tc.opts...)
			var se *task.ConfigError
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.says) || !errors.Is(err, task.ErrInvalidConfig) {
				t.Errorf("%s: %v; want a *task.ConfigError on %s saying %q", tc.name, err, tc.field, tc.says)
			}
		}
		if ids, err := c.Inspector().ListRuns(ctx, client.ListOptions{}); err != nil || len(ids.Items) != 0 {
			t.Fatalf("runs after refused triggers = %v, %v; want none", ids, err)
		}
		// A time already passed queues the run at once.
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "past"}, client.RunAt(time.Now().Add(-time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if info, err := c.Inspector().GetRun(ctx, ref.ID()); err != nil || info.Scheduled || info.ScheduledAt != nil {
			t.Fatalf("run at a past time = %+v, %v; want queued at once", info, err)
		}
	})
}

// A batch with RunIn schedules every run of it; a duplicate within the
// batch collides with the scheduled first.
func TestRunManyScheduled(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		tk := task.Must[orderInput, orderResult]("sched-many", task.Options{Idempotency: task.TTL(`"b:" + input.id`, time.Minute)})
		refs, err := client.RunMany(ctx, c, tk, []orderInput{{ID: "1"}, {ID: "2"}, {ID: "1"}}, client.RunIn(time.Hour))
		var bulk *client.BulkCollisionError
		if !errors.As(err, &bulk) || len(bulk.Collisions) != 1 || bulk.Collisions[0].ExistingRunID != refs[0].ID() {
			t.Fatalf("batch error = %v; want one collision naming the first run", err)
		}
		for _, r := range refs[:2] {
			info, err := c.Inspector().GetRun(ctx, r.ID())
			if err != nil || !info.Scheduled {
				t.Fatalf("run of the batch = %+v, %v; want scheduled", info, err)
			}
		}
	})
}

// Scheduled triggers of one key made at once, from many goroutines and
// two clients, create exactly one run; every other is told its ID.
func TestConcurrentScheduledDuplicatesCreateOneRun(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		clients := []*client.Client{partitionedClient(t, b), partitionedClient(t, b)}
		tk := task.Must[orderInput, orderResult]("sched-race", task.Options{Idempotency: task.TTL(`"race:" + input.id`, time.Minute)})
		const n = 40
		ids, errs := make([]string, n), make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ref, err := client.RunNoWait(ctx, clients[i%2], tk, orderInput{ID: "1"}, client.RunIn(time.Duration(i+1)*time.Minute))
				if err == nil {
					ids[i] = ref.ID()
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		owner := ""
		for i := range n {
			if errs[i] == nil {
				if owner != "" {
					t.Fatalf("two scheduled runs created for one key: %s and %s", owner, ids[i])
				}
				owner = ids[i]
			}
		}
		if owner == "" {
			t.Fatal("no run created")
		}
		for i, err := range errs {
			var coll *client.IdempotencyCollisionError
			if err != nil && (!errors.As(err, &coll) || coll.ExistingRunID != owner) {
				t.Fatalf("trigger %d: %v; want a collision naming %s", i, err, owner)
			}
		}
		if info, err := clients[0].Inspector().GetRun(ctx, owner); err != nil || !info.Scheduled {
			t.Fatalf("the one run = %+v, %v; want scheduled", info, err)
		}
	})
}
