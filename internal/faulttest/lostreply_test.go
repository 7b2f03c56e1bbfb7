package faulttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// The connection breaks after Redis ran a trigger's script but before the
// reply reached the client. go-redis sends the script again on a new
// connection, and the second run finds what the first one did: the key held
// by the trigger's own run, or the run's record already there. The caller
// must be told the run was created, not that it collided with itself or
// failed, and exactly one run must exist.
func TestLostTriggerReplyIsNotACollision(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	proxy, err := faulttest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	dir := t.TempDir()
	rec, f, err := history.Create(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	defer rdb.Close()
	rdb.AddHook(history.NewHook(rec))
	c, err := client.New(client.Options{Redis: rdb, Namespace: "lost", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The debounce task's key is held for its window: a long one, so that
	// it is still held when the test reads it after the resent trigger
	// (the default 300ms can pass while go-redis dials again under load).
	defs, _ := faulttest.Definitions(faulttest.TaskConfig{Window: time.Minute})
	ctx := context.Background()
	// Load the scripts first: a NOSCRIPT reply is not an execution.
	if _, err := c.TriggerJSON(ctx, defs[3], []byte(`{"op":"warm-up","key":"w"}`)); err != nil {
		t.Fatal(err)
	}

	for i, def := range defs {
		t.Run(def.Name, func(t *testing.T) {
			in := faulttest.Input{Op: "lost-reply-" + def.Name, Key: "k"}
			raw, _ := json.Marshal(in)
			before := proxy.Dropped.Load()
			proxy.DropReplyOnce(in.Op)
			h, err := c.TriggerJSON(ctx, def, raw)
			if proxy.Dropped.Load() != before+1 {
				t.Fatal("the proxy did not drop the reply")
			}
			if err != nil {
				t.Fatalf("trigger whose first reply was lost: %v; want the run it created", err)
			}
			ids, _ := redisstore.StoreOf(clientlink.Store(c)).ListRunIDs(ctx, 0, 100)
			if len(ids) != i+2 || ids[0] != h.ID() {
				t.Fatalf("runs = %v; want exactly one new run, %s", ids, h.ID())
			}
			if def.Idempotency != nil {
				key, _ := def.Key(raw, nil)
				ks, _, _ := redisstore.StoreOf(clientlink.Store(c)).GetKey(ctx, key)
				if ks.Owner != h.ID() {
					t.Fatalf("key owner = %q, want %s", ks.Owner, h.ID())
				}
			}
		})
	}

	t.Run("batch", func(t *testing.T) {
		def := defs[0]
		trs := []client.Trigger{
			{Input: json.RawMessage(`{"op":"batch-lost-1","key":"b1"}`)},
			{Input: json.RawMessage(`{"op":"batch-lost-2","key":"b2"}`)},
		}
		proxy.DropReplyOnce("batch-lost-2")
		hs, err := c.TriggerManyJSON(ctx, def, trs)
		var bulk *client.BulkCollisionError
		if errors.As(err, &bulk) || err != nil {
			t.Fatalf("batch whose reply was lost: %v; want both runs created", err)
		}
		if len(hs) != 2 || hs[0] == nil || hs[1] == nil {
			t.Fatalf("handles = %v", hs)
		}
	})

	// The recorded history agrees: no trigger was told a collision or an
	// error for a run it created.
	time.Sleep(10 * time.Millisecond)
	ops, err := history.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := history.Check(ops, history.Options{})
	for _, v := range rep.Violations {
		if v.Rule != history.RuleRunLost { // no worker runs here
			t.Error(v)
		}
	}
}
