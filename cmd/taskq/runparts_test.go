package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// runs get counts a run's signals and durable steps, in its fields and in
// its JSON.
func TestRunsGetCountsSignalsAndSteps(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		id := triggerLease(t, c, "parts")
		st := redisstore.StoreOf(clientlink.Store(c))
		for _, sig := range []string{"a", "b"} {
			if res, err := st.SignalRun(ctx, id, sig, []byte(`{}`), 10); err != nil || !res.Delivered {
				t.Fatalf("signal = %+v, %v", res, err)
			}
		}
		if _, err := st.SaveStepResult(ctx, id, "reserve", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		cl := newCLI(t, b)
		r := cl.run("runs", "get", id)
		out := strings.Join(strings.Fields(r.stdout), " ")
		if r.code != exitOK || !strings.Contains(out, "Signals: 2") || !strings.Contains(out, "Steps: 1") || strings.Contains(out, "Attempts:") {
			t.Fatalf("runs get: exit %d\n%s", r.code, r.stdout)
		}
		r = cl.run("runs", "get", id, "-o", "json")
		var v struct{ SignalCount, StepCount int }
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.SignalCount != 2 || v.StepCount != 1 {
			t.Fatalf("runs get -o json: %v\n%s", err, r.stdout)
		}
	})
}
