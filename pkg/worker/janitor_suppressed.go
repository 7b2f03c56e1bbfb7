package worker

import (
	"context"
	"time"
)

// suppressedTrimmer trims the records of suppressed triggers past their
// retention (an engine.Engine has it).
type suppressedTrimmer interface {
	TrimSuppressed(ctx context.Context, part int, cutoff time.Time) (int64, error)
	SuppressedRetention() time.Duration
}

// trimSuppressed removes partition part's suppressed-trigger records older
// than their retention, once per sweep: the stream's cap bounds it between
// sweeps, and listings leave the older records out meanwhile.
func (j *janitor) trimSuppressed(part int) {
	t, ok := j.store.(suppressedTrimmer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.opTimeout)
	defer cancel()
	if _, err := t.TrimSuppressed(ctx, part, j.clock.Now().Add(-t.SuppressedRetention())); err != nil {
		j.log.Warn("taskq: trimming suppressed-trigger records failed", "partition", part, "err", err)
	}
}
