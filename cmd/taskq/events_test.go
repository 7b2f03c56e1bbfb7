package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/devtasks"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// registerWebhooks registers the example tasks the way a worker does, and
// stops the worker: nothing runs the events' runs.
func registerWebhooks(t *testing.T, b *redistest.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := startWorker(t, b).Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func storedEvents(t *testing.T, c *client.Client) []*client.EventInfo {
	t.Helper()
	evs, err := listEvents(context.Background(), c.Inspector(), devtasks.EventKey, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func deliveries(ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "{\"id\":%q}\n", id)
	}
	return b.String()
}

// A --batch is checked whole before its first chunk is sent: a payload
// over the limit in a later chunk is a usage error that names it by its
// place in --data, and nothing of the batch is stored.
func TestEventsPushBatchCheckedBeforeAnythingIsStored(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		registerWebhooks(t, b)
		c, cl := newTestClient(t, b), newCLI(t, b)
		big := fmt.Sprintf("{\"id\":\"big\",\"pad\":%q}\n", strings.Repeat("x", client.MaxInputBytesDefault))
		data := deliveries("a1", "a2", "a3") + big + deliveries("a5")

		r := cl.runIn(data, "events", "push", devtasks.EventKey, "--batch", "--chunk", "2", "--data", "-")
		if r.code != exitUsage {
			t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitUsage, r.stdout, r.stderr)
		}
		if want := fmt.Sprintf("--data payload 4 of 5 is %d bytes, over the limit of %d", len(big)-1, client.MaxInputBytesDefault); !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("stdout = %q, want nothing", r.stdout)
		}
		if evs := storedEvents(t, c); len(evs) != 0 {
			t.Fatalf("%d events stored by a refused batch, want none", len(evs))
		}
	})
}

// When Redis fails some events of a --batch, the events it stored are
// still printed, and the error names the payloads that were not stored,
// including those of chunks never sent.
func TestEventsPushBatchListsWhatWasStoredWhenRedisFailsSome(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		registerWebhooks(t, b)
		c, cl := newTestClient(t, b), newCLI(t, b)
		ctx := context.Background()
		// A wrong-typed idempotency key makes the push script refuse the
		// event whose task derives that key, and only that event.
		ks, err := redisstore.StoreOf(clientlink.Store(c)).KeyKeys(ctx, "webhook:b2")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Client.HSet(ctx, ks.IdempotencyKey("webhook:b2"), "x", "y").Err(); err != nil {
			t.Fatal(err)
		}

		r := cl.runIn(deliveries("b1", "b2", "b3", "b4", "b5"), "events", "push", devtasks.EventKey,
			"--batch", "--chunk", "3", "--data", "-", "-o", "json")
		if r.code != exitFailure {
			t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitFailure, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "payload 2 and 4-5 (not sent) of 5 not stored") {
			t.Errorf("stderr does not name the payloads not stored:\n%s", r.stderr)
		}
		var printed []wire.EventResult
		if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil {
			t.Fatalf("stdout is not a JSON array: %v\n%s", err, r.stdout)
		}
		stored := storedEvents(t, c)
		if len(printed) != 2 || len(stored) != 2 {
			t.Fatalf("printed %d events and stored %d, want b1 and b3 both times\n%s", len(printed), len(stored), r.stdout)
		}
		ids := map[string]bool{stored[0].ID: true, stored[1].ID: true}
		for _, v := range printed {
			if !ids[v.ID] {
				t.Errorf("printed event %s is not stored", v.ID)
			}
			if k := v.Runs[0].IdempotencyKey; k != "webhook:b1" && k != "webhook:b3" {
				t.Errorf("printed event %s has key %q, want webhook:b1 or webhook:b3", v.ID, k)
			}
		}
	})
}
