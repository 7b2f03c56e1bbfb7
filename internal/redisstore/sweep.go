package redisstore

import (
	"context"
	"time"
)

// sweepScript removes index entries of expired records: lua/sweep.lua.
var sweepScript = loadScript("sweep")

// SweepRuns removes entries of expired run records created before cutoff
// from the runs index of partition part, looking at most limit entries
// from offset. It returns how many it removed and how many it looked at.
func (s *Store) SweepRuns(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return 0, 0, err
	}
	return s.sweep(ctx, ks.Runs(), ks.Prefix()+keyRun, cutoff, offset, limit)
}

// SweepEvents is SweepRuns for the events index of partition part.
func (s *Store) SweepEvents(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return 0, 0, err
	}
	return s.sweep(ctx, ks.Events(), ks.Prefix()+keyEvent, cutoff, offset, limit)
}

func (s *Store) sweep(ctx context.Context, index, recordPrefix string, cutoff time.Time, offset, limit int) (int, int, error) {
	k := [1 + sweepKeyCount]string{sweepKeyIndex: index}
	a := [1 + sweepArgCount]any{
		sweepArgCutoff:       unixMS(cutoff),
		sweepArgOffset:       offset,
		sweepArgLimit:        limit,
		sweepArgRecordPrefix: recordPrefix,
	}
	v, err := s.runScript(ctx, sweepScript, k[1:], a[1:]...)
	if err != nil {
		return 0, 0, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return 0, 0, err
	}
	return int(asInt(r[0])), int(asInt(r[1])), nil
}
