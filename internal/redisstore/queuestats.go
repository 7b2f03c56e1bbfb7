package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// QueueCountMax bounds how many undelivered entries of one task stream
// QueueStats counts one by one, when Redis cannot tell a group's lag (after
// some deletions, and on miniredis). Past it, Queued is a lower bound.
const QueueCountMax = 10000

// QueueStats reads the queue figures of each of tasks, in two pipelined
// round trips over every partition and priority: XINFO GROUPS and XLEN of each stream,
// then the first undelivered entry of each stream with some. A stream or
// that does not exist counts as empty; a stream without the consumer group
// (no worker has read it yet) as wholly queued.
func (s *Store) QueueStats(ctx context.Context, tasks []string) (map[string]engine.QueueStat, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]engine.QueueStat, len(tasks))
	if len(tasks) == 0 {
		return out, nil
	}
	type one struct {
		task, stream string
		from         string // the first stream ID after the last delivered
		info         *redis.XInfoGroupsCmd
		len          *redis.IntCmd
		rng          *redis.XMessageSliceCmd
		queued       int64
		count        bool // count the undelivered entries from rng
	}
	var all []*one
	for i := range parts.Count() {
		ks := parts.Keys(i)
		for _, t := range tasks {
			for _, p := range priorities {
				all = append(all, &one{task: t, stream: ks.Lane(t, p)})
			}
		}
	}
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range all {
			o.info = p.XInfoGroups(ctx, o.stream)
			o.len = p.XLen(ctx, o.stream)
		}
		return nil
	})
	var ranged []*one
	for _, o := range all {
		st := out[o.task]
		groups, err := o.info.Result()
		if err != nil {
			if isNoSuchKey(err) {
				out[o.task] = st
				continue
			}
			return nil, err
		}
		n, err := o.len.Result()
		if err != nil {
			return nil, err
		}
		grouped := false
		for _, g := range groups {
			if g.Name != GroupName {
				continue
			}
			grouped = true
			st.InFlight += g.Pending
			o.queued = g.Lag
			// A lag Redis could not tell (-1), or one larger than what
			// the stream holds beside its pending entries, is counted.
			if g.Lag < 0 || g.Lag > n-g.Pending {
				o.count = true
			}
			if o.count || o.queued > 0 {
				ranged = append(ranged, o)
				o.from = afterID(g.LastDeliveredID)
			}
		}
		if !grouped && n > 0 {
			// No worker has created the group yet: every entry waits.
			o.queued, o.from = n, "-"
			ranged = append(ranged, o)
		}
		out[o.task] = st
	}
	if len(ranged) == 0 {
		return out, nil
	}
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range ranged {
			count := int64(1)
			if o.count {
				count = QueueCountMax
			}
			o.rng = p.XRangeN(ctx, o.stream, o.from, "+", count)
		}
		return nil
	})
	for _, o := range ranged {
		msgs, err := o.rng.Result()
		if err != nil && !isNoSuchKey(err) {
			return nil, err
		}
		st := out[o.task]
		switch {
		case o.count:
			st.Queued += int64(len(msgs))
		case len(msgs) > 0:
			// With nothing after the last delivered entry none is queued,
			// whatever the lag said: Redis overcounts it after some
			// deletions, which the check against XLEN misses while
			// acknowledged entries linger at the stream's head (see
			// taskq_trim_acked).
			st.Queued += o.queued
		}
		if len(msgs) > 0 {
			if t, ok := entryTime(msgs[0].ID); ok && (st.Oldest.IsZero() || t.Before(st.Oldest)) {
				st.Oldest = t
			}
		}
		out[o.task] = st
	}
	return out, nil
}

// afterID is the stream ID just after id ("0-1" after "0-0"), the start of
// an XRANGE that leaves id out without the exclusive "(" form.
func afterID(id string) string {
	sid, ok := parseStreamID(id)
	if !ok {
		return "-"
	}
	sid.seq++
	return sid.String()
}

// entryTime is the time a stream entry ID names.
func entryTime(id string) (time.Time, bool) {
	sid, ok := parseStreamID(id)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(sid.ms)), true
}

// isNoSuchKey tells the error XINFO gives for a stream that does not exist.
func isNoSuchKey(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(strings.ToLower(err.Error()), "no such key")
}
