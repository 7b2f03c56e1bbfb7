package redisstore_test

import (
	"testing"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// link_retry.lua writes both sides of a retry's link, never creates a
// record that is gone, and keeps a link that names another run.
func TestLinkRetry(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		of, retry, other := f.params("t", "k1", engine.StrategyStatus), f.params("t", "k2", engine.StrategyStatus), f.params("t", "k3", engine.StrategyStatus)
		for _, p := range []*engine.EnqueueParams{of, retry, other} {
			f.enqueue(p)
		}
		if existing, err := f.s.LinkRetry(f.ctx, of.RunID, retry.RunID); err != nil || existing != "" {
			t.Fatalf("LinkRetry = %q, %v", existing, err)
		}
		r, err := f.s.GetRun(f.ctx, retry.RunID)
		if err != nil || r.RetryOf != of.RunID || r.RetriedBy != "" {
			t.Fatalf("the retry's record: %+v, %v; want retry of %s", r, err, of.RunID)
		}
		o, err := f.s.GetRun(f.ctx, of.RunID)
		if err != nil || o.RetriedBy != retry.RunID || o.RetryOf != "" {
			t.Fatalf("the retried record: %+v, %v; want retried by %s", o, err, retry.RunID)
		}
		// Again: the same link is no change.
		if existing, err := f.s.LinkRetry(f.ctx, of.RunID, retry.RunID); err != nil || existing != "" {
			t.Fatalf("LinkRetry again = %q, %v", existing, err)
		}
		// A second retry of the same run keeps the first link and says so.
		if existing, err := f.s.LinkRetry(f.ctx, of.RunID, other.RunID); err != nil || existing != retry.RunID {
			t.Fatalf("a second retry's link = %q, %v; want it to name %s", existing, err, retry.RunID)
		}
		if o, _ := f.s.GetRun(f.ctx, of.RunID); o.RetriedBy != retry.RunID {
			t.Fatalf("the first link was overwritten: retried by %s", o.RetriedBy)
		}
		// A record that is gone is not created.
		f.b.Client.Del(f.ctx, f.k.Run(of.RunID))
		if _, err := f.s.LinkRetry(f.ctx, of.RunID, "run-new"); err != nil {
			t.Fatal(err)
		}
		if f.exists(f.k.Run(of.RunID)) {
			t.Fatal("a link created the record of a run that was gone")
		}
	})
}
