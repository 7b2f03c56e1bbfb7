package faulttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The tasks subscribed to the event of the fan-out test, one of each kind
// of outcome, in the order they are triggered (by name): a run created; a
// collision with a run triggered directly before the event; a collision
// with the run the first task created; a run without a key; and a task
// whose expression fails on the payload.
var fanoutTasks = []struct {
	name string
	idem *task.Idempotency
	runs int // runs the task has once the event is ingested
}{
	{"fo.a-created", task.TTL(`"a:" + input.id`, time.Hour), 1},
	{"fo.b-held", task.TTL(`"b:" + input.id`, time.Hour), 1},
	{"fo.c-same-key", task.TTL(`"a:" + input.id`, time.Hour), 0},
	{"fo.d-no-key", nil, 1},
	{"fo.e-error", task.TTL(`input.missing`, time.Hour), 0},
}

// aheadClock tells the time a fixed duration from now.
type aheadClock struct{ by time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.by) }

// An ingesting process is killed (SIGKILL) at each point between storing
// an event and recording its fan-out: after storing it, after some but not
// all of its tasks' triggers, after all of them but before recording the
// outcomes. Each kill leaves the fan-out pending. Workers started once the
// grace period has passed (two of them, recovering at the same time)
// finish every fan-out: each subscribed task has exactly one run or one
// recorded collision, none has two, and the event records what an
// ingester that did not die would have recorded.
func TestEventFanoutSurvivesIngesterKill(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	const ns = "fanout"
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(client.Options{Redis: rdb, Namespace: ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	defs := make([]*task.Definition, len(fanoutTasks))
	for i, ft := range fanoutTasks {
		if defs[i], err = task.NewDefinition(ft.name, task.Options{Idempotency: ft.idem, OnEvents: []string{"order.paid"}}); err != nil {
			t.Fatal(err)
		}
	}
	newWorker := func(clock task.Clock) *worker.Worker {
		w, err := worker.New(worker.Options{Redis: rdb, Namespace: ns, Logger: quiet, Clock: clock,
			LeaseDuration: 2 * time.Second, FetchBlock: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range defs {
			if err := w.HandleJSON(d, func(_ worker.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil }); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	// A worker registers the subscriptions and goes: no worker runs while
	// the ingesters push and die.
	w := newWorker(nil)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	type kill struct {
		name      string
		step      engine.FanoutStep
		triggered int
	}
	kills := []kill{{"after storing the event", engine.FanoutStored, 0}}
	for n := 1; n < 4; n++ {
		kills = append(kills, kill{fmt.Sprintf("after %d of 4 triggers", n), engine.FanoutTriggered, n})
	}
	kills = append(kills, kill{"after every trigger, before recording", engine.FanoutTriggered, 4}, kill{"not killed", 0, 0})

	store := redisstore.StoreOf(clientlink.Store(c))
	keys := store.Keys()
	held := map[string]string{} // order id -> the run that held fo.b's key
	eventOf := map[string]string{}
	for i, k := range kills {
		id := fmt.Sprintf("o-%d", i)
		h, err := c.TriggerJSON(ctx, defs[1], []byte(`{"id":"`+id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		held[id] = h.ID()
		p, err := faulttest.StartIngester(os.Args[0], []string{"-test.run=^$"}, "ingester-"+id, faulttest.IngesterConfig{
			RedisURL: srv.URL(), Namespace: ns, Key: "order.paid", Payload: json.RawMessage(`{"id":"` + id + `"}`),
			KillStep: k.step, KillTriggered: k.triggered,
		}, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "killing"
		if k.step == 0 {
			prefix = "pushed"
		}
		f, err := p.WaitLine(prefix+" ", 20*time.Second)
		if err != nil || len(f) != 1 {
			p.Kill()
			t.Fatalf("%s: %v %v", k.name, f, err)
		}
		<-p.Done()
		eventOf[id] = f[0]
		pending := rdb.ZScore(ctx, keys.Fanouts(), f[0]).Err() == nil
		if pending != (k.step != 0) {
			t.Fatalf("%s: fan-out pending %v", k.name, pending)
		}
		ev, err := c.Inspector().GetEvent(ctx, f[0])
		if err != nil || len(ev.Runs) != 0 && k.step != 0 {
			t.Fatalf("%s: event %+v, %v; want it stored without outcomes", k.name, ev, err)
		}
	}

	// Two workers whose clocks are past the grace period recover at once.
	for i := 0; i < 2; i++ {
		w := newWorker(aheadClock{engine.FanoutGrace + time.Second})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	}
	eventually(t, 20*time.Second, "every fan-out finished", func() bool {
		return rdb.ZCard(ctx, keys.Fanouts()).Val() == 0
	})

	// Every run of the namespace, by task and order.
	ids, err := store.ListRunIDs(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, rid := range ids {
		r := rdb.HMGet(ctx, keys.Run(rid), "task", "input").Val()
		var in struct{ ID string }
		_ = json.Unmarshal([]byte(fmt.Sprint(r[1])), &in)
		runs[fmt.Sprint(r[0])+" "+in.ID]++
	}
	for i, k := range kills {
		id := fmt.Sprintf("o-%d", i)
		ev, err := c.Inspector().GetEvent(ctx, eventOf[id])
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Runs) != len(fanoutTasks) {
			t.Fatalf("%s: event records %+v", k.name, ev.Runs)
		}
		byTask := map[string]client.EventTaskRun{}
		for _, r := range ev.Runs {
			byTask[r.Task] = r
		}
		a, b, cc, d, e := byTask["fo.a-created"], byTask["fo.b-held"], byTask["fo.c-same-key"], byTask["fo.d-no-key"], byTask["fo.e-error"]
		if a.Outcome != events.OutcomeCreated || b.Outcome != events.OutcomeDeduplicated || b.RunID != held[id] ||
			cc.Outcome != events.OutcomeDeduplicated || cc.RunID != a.RunID || d.Outcome != events.OutcomeCreated ||
			e.Outcome != events.OutcomeError {
			t.Errorf("%s: event records %+v", k.name, ev.Runs)
		}
		for _, ft := range fanoutTasks {
			if n := runs[ft.name+" "+id]; n != ft.runs {
				t.Errorf("%s: %s has %d runs, want %d", k.name, ft.name, n, ft.runs)
			}
		}
		// The runs the fan-out created run, with the event's payload.
		for _, r := range []client.EventTaskRun{a, d} {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			info, err := c.Handle(r.RunID).Wait(wctx)
			cancel()
			if err != nil || info.Task != r.Task || info.Status != client.StatusSucceeded || string(info.Result) != `{"id":"`+id+`"}` {
				t.Errorf("%s: run %s of %s: %+v, %v", k.name, r.RunID, r.Task, info, err)
			}
		}
	}
	if want := 3 * len(kills); len(ids) != want {
		t.Fatalf("%d runs in the namespace, want %d", len(ids), want)
	}
}
