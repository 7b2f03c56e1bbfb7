package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Events live in three kinds of keys, all under the namespace's hash tag:
//
//	taskq:{ns}:event:<event id>      hash  key, payload, meta, created (ms), runs (JSON)
//	taskq:{ns}:events                zset  every event by time (ms), swept by SweepEvents
//	taskq:{ns}:eventkey:<event key>  zset  the events of one key by time (ms); trimmed
//	                                       on every push and expiring with its newest event

func parseEvent(id string, h map[string]string) (*engine.Event, error) {
	e := &engine.Event{ID: id, Key: h[eventKey], Payload: []byte(h[eventPayload]), Meta: []byte(h[eventMeta])}
	created, _ := strconv.ParseInt(h[eventCreated], 10, 64)
	e.Created = fromMS(created)
	e.PendingFanout = h[eventFanout]
	if raw := h[eventRuns]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &e.Runs); err != nil {
			return nil, fmt.Errorf("event %s: runs: %w", id, err)
		}
	}
	return e, nil
}

// GetEvent reads an event record.
func (s *Store) GetEvent(ctx context.Context, id string) (*engine.Event, error) {
	ks, err := s.keysOfRun(ctx, id)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, fmt.Errorf("%w: %s", engine.ErrEventNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, ks.Event(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s", engine.ErrEventNotFound, id)
	}
	return parseEvent(id, h)
}

// GetEvents reads many event records in one round trip. An event that does
// not exist (any more) is left out.
func (s *Store) GetEvents(ctx context.Context, ids []string) ([]*engine.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			if ks, err := parts.runKeys(id); err == nil {
				cmds[i] = p.HGetAll(ctx, ks.Event(id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*engine.Event, 0, len(ids))
	for i, c := range cmds {
		if c == nil {
			continue // an event that cannot exist
		}
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		e, err := parseEvent(ids[i], h)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ListEventIDs returns up to limit event IDs, newest first, of every event
// or, with key set, of the events of that event key, in every partition.
func (s *Store) ListEventIDs(ctx context.Context, key string, offset, limit int64) ([]string, error) {
	indexes, err := s.indexes(ctx, eventIndex(key))
	if err != nil {
		return nil, err
	}
	return s.rangeIndexes(ctx, indexes, offset, limit)
}

// SubscribeFinished subscribes to the namespace's notices of runs reaching
// a terminal status, for counting them by status (see ParseFinished): to
// the finished channel of every partition, channels in all (Redis confirms
// each with a NoticeSubscribed). The caller closes the returned Notices,
// which is nil only when the partitions could not be read.
func (s *Store) SubscribeFinished(ctx context.Context) (n *Notices, channels int, err error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, 0, err
	}
	names := make([]string, parts.Count())
	for i := range names {
		names[i] = parts.keys[i].FinishedChannel()
	}
	n = s.Notices()
	// On an error n still subscribes once Redis answers.
	return n, len(names), n.Subscribe(ctx, names...)
}
