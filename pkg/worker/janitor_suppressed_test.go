package worker

import (
	"context"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// Each sweep trims the suppressed-trigger records past their retention, by
// the worker's clock, and keeps the younger ones.
func TestJanitorTrimsSuppressedTriggers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		st := connect.Engine(b.Client, b.Namespace)
		st.SetSuppressedLimits(engine.SuppressedLimits{Retention: time.Hour})
		trigger := func(run string) {
			if _, err := st.Enqueue(ctx, &engine.EnqueueParams{RunID: run, Task: "t", Input: []byte(`{}`), Key: "k",
				Strategy: engine.StrategyStatus, Hold: time.Minute, Retention: time.Hour, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		trigger("owner")
		trigger("dup")
		count := func() int {
			got, _, err := st.ListSuppressed(ctx, engine.SuppressedQuery{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		parts, err := st.PartitionCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		j := &janitor{store: st, every: time.Minute, opTimeout: time.Second, clock: systemClock{}, log: discard}
		trimAll := func() {
			for p := range parts {
				j.trimSuppressed(p)
			}
		}
		trimAll()
		if n := count(); n != 1 {
			t.Fatalf("%d records after a trim within their retention, want 1", n)
		}
		j.clock = fixedClock{t: time.Now().Add(2 * time.Hour)}
		trimAll()
		// Listed at the real time, within their retention: only a trim
		// removes them.
		if n := count(); n != 0 {
			t.Fatalf("%d records left after a trim past their retention", n)
		}
	})
}
