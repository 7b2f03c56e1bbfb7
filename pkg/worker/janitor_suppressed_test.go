package worker

import (
	"context"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// Each sweep trims the suppressed-trigger records past their retention, by
// the worker's clock, and keeps the younger ones.
func TestJanitorTrimsSuppressedTriggers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		st := redisstore.New(b.Client, b.Namespace)
		st.SetSuppressedLimits(redisstore.SuppressedLimits{Retention: time.Hour})
		trigger := func(run string) {
			if _, err := st.Enqueue(ctx, &redisstore.EnqueueParams{RunID: run, Task: "t", Input: []byte(`{}`), Key: "k",
				Strategy: redisstore.StrategyStatus, Hold: time.Minute, Retention: time.Hour, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		trigger("owner")
		trigger("dup")
		count := func() int {
			got, _, err := st.ListSuppressed(ctx, redisstore.SuppressedQuery{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		j := &janitor{store: st, every: time.Minute, opTimeout: time.Second, clock: systemClock{}, log: discard}
		j.trimSuppressed(0)
		if n := count(); n != 1 {
			t.Fatalf("%d records after a trim within their retention, want 1", n)
		}
		j.clock = fixedClock{t: time.Now().Add(2 * time.Hour)}
		j.trimSuppressed(0)
		if n := b.Client.XLen(ctx, st.Keys().Prefix()+"suppressed").Val(); n != 0 {
			t.Fatalf("%d entries left after a trim past their retention", n)
		}
	})
}
