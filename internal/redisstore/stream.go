package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delivery is one stream entry handed to a worker.
type Delivery struct {
	Task    string
	EntryID string
	RunID   string
	// Spec is what the entry says of the run; nil for an entry that says
	// nothing (Start then reads it from the record).
	Spec *RunSpec
	// Redelivered is set on a delivery reclaimed after its lease lapsed:
	// the entry was delivered before.
	Redelivered bool
}

// RunSpec is what a worker needs of a run to run it and record its
// outcome. None of it changes once the run is queued, so its stream entry
// carries it (see lib.lua) and the start and finish scripts need not read
// it from the record.
type RunSpec struct {
	Input, Meta   []byte
	Key           string
	Strategy      Strategy
	Retries       int
	Timeout       time.Duration
	Created       time.Time
	MaxDeliveries int
	Retain        time.Duration
	Retention     time.Duration
	// Fails counts the run's failed attempts before this delivery.
	Fails int
	// Attempts counts the attempts the run had begun when this entry was
	// written. Unless the run changed since, this delivery's attempt is
	// Attempts+1, which lets a worker run the handler before the attempt
	// is recorded as begun (see FinishParams.Began).
	Attempts int
}

// parseSpec reads a stream entry's fields; nil when it has no valid spec.
func parseSpec(v map[string]any) *RunSpec {
	o, _ := v["o"].(string)
	strat, rest, ok := strings.Cut(o, " ")
	if !ok {
		return nil
	}
	var n [8]int64
	for i := range n {
		var f string
		f, rest, _ = strings.Cut(rest, " ")
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil
		}
		n[i] = x
	}
	if rest != "" {
		return nil
	}
	in, _ := v["i"].(string)
	meta, _ := v["m"].(string)
	key, _ := v["k"].(string)
	return &RunSpec{
		Input: []byte(in), Meta: []byte(meta), Key: key, Strategy: Strategy(strat),
		Retries: int(n[0]), Timeout: time.Duration(n[1]) * time.Millisecond, Created: fromMS(n[2]),
		MaxDeliveries: int(n[3]), Retain: time.Duration(n[4]) * time.Millisecond, Retention: time.Duration(n[5]) * time.Millisecond,
		Fails: int(n[6]), Attempts: int(n[7]),
	}
}

// EnsureGroup creates the task's stream and consumer group if missing. The
// group starts at the stream's beginning so runs queued before any worker
// existed are delivered. It is a script that runs at maxmemory (see
// ensure_group.lua), where Redis refuses XGROUP CREATE on its own: workers
// must be able to start and drain the queue then.
func (s *Store) EnsureGroup(ctx context.Context, task string) error {
	_, err := s.runScript(ctx, s.scripts.ensureGroup, []string{s.keys.Stream(task)}, GroupName)
	return err
}

func (s *Store) deliveries(streams []redis.XStream, taskOf map[string]string) []Delivery {
	var out []Delivery
	for _, st := range streams {
		for _, m := range st.Messages {
			id, _ := m.Values["r"].(string)
			out = append(out, Delivery{Task: taskOf[st.Stream], EntryID: m.ID, RunID: id, Spec: parseSpec(m.Values)})
		}
	}
	return out
}

// ReadGroup blocks up to block for new deliveries of any of tasks, at most
// count in all. It returns nil, nil when nothing arrived.
func (s *Store) ReadGroup(ctx context.Context, consumer string, tasks []string, count int, block time.Duration) ([]Delivery, error) {
	streams := make([]string, 0, 2*len(tasks))
	taskOf := make(map[string]string, len(tasks))
	for _, t := range tasks {
		k := s.keys.Stream(t)
		streams = append(streams, k)
		taskOf[k] = t
	}
	for range tasks {
		streams = append(streams, ">")
	}
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: GroupName, Consumer: consumer, Streams: streams, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.deliveries(res, taskOf), nil
}

// AutoClaim takes over deliveries of task whose lease (idle time in the
// pending list) is longer than minIdle: their worker died or stalled.
func (s *Store) AutoClaim(ctx context.Context, task, consumer string, minIdle time.Duration, count int) ([]Delivery, error) {
	k := s.keys.Stream(task)
	msgs, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: k, Group: GroupName, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count),
	}).Result()
	if err != nil {
		return nil, err
	}
	ds := s.deliveries([]redis.XStream{{Stream: k, Messages: msgs}}, map[string]string{k: task})
	for i := range ds {
		ds[i].Redelivered = true
	}
	return ds, nil
}

// Lease is a delivery a worker is running.
type Lease struct {
	EntryID string
	RunID   string
	Attempt int
}

// LeaseState is what a heartbeat learned of one lease.
type LeaseState int

// Lease states reported by Heartbeat.
const (
	LeaseLost     LeaseState = 0 // another consumer took the delivery
	LeaseHeld     LeaseState = 1 // extended
	LeaseFinished LeaseState = 2 // the run was cancelled or ended
	LeaseStale    LeaseState = 3 // a newer attempt owns the run
)

// LeaseReport is what a heartbeat learned of one lease.
type LeaseReport struct {
	State LeaseState
	// Reason is the run's error when State is LeaseFinished: why it was
	// cancelled ("superseded by run <id>", ...).
	Reason string
}

// Heartbeat extends the leases consumer holds on task's stream.
func (s *Store) Heartbeat(ctx context.Context, task, consumer string, leases []Lease) ([]LeaseReport, error) {
	args := make([]any, 0, 3+3*len(leases))
	args = append(args, GroupName, consumer, s.keys.Prefix())
	for _, l := range leases {
		args = append(args, l.EntryID, l.RunID, l.Attempt)
	}
	v, err := s.runScript(ctx, s.scripts.heartbeat, []string{s.keys.Stream(task)}, args...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil {
		return nil, err
	}
	out := make([]LeaseReport, len(r)/2)
	for i := range out {
		out[i] = LeaseReport{State: LeaseState(asInt(r[2*i])), Reason: asString(r[2*i+1])}
	}
	return out, nil
}

// Promote queues up to limit runs whose retry is due.
func (s *Store) Promote(ctx context.Context, now time.Time, limit int) (int, error) {
	v, err := s.runScript(ctx, s.scripts.promote, []string{s.keys.Retry()}, unixMS(now), limit, s.keys.Prefix())
	if err != nil {
		return 0, err
	}
	return int(asInt(v)), nil
}

// NextRetry returns when the earliest scheduled retry is due, or false.
func (s *Store) NextRetry(ctx context.Context) (time.Time, bool, error) {
	z, err := s.rdb.ZRangeWithScores(ctx, s.keys.Retry(), 0, 0).Result()
	if err != nil || len(z) == 0 {
		return time.Time{}, false, err
	}
	return fromMS(int64(z[0].Score)), true, nil
}

// SweepRuns removes index entries of expired run records created before
// cutoff, looking at most limit entries from offset. It returns how many it
// removed and how many it looked at.
func (s *Store) SweepRuns(ctx context.Context, cutoff time.Time, offset, limit int) (removed, looked int, err error) {
	return s.sweep(ctx, s.keys.Runs(), s.keys.Prefix()+"run:", cutoff, offset, limit)
}

// SweepEvents is SweepRuns for the events index.
func (s *Store) SweepEvents(ctx context.Context, cutoff time.Time, offset, limit int) (removed, looked int, err error) {
	return s.sweep(ctx, s.keys.Events(), s.keys.Prefix()+"event:", cutoff, offset, limit)
}

func (s *Store) sweep(ctx context.Context, index, recordPrefix string, cutoff time.Time, offset, limit int) (int, int, error) {
	v, err := s.runScript(ctx, s.scripts.sweep, []string{index}, unixMS(cutoff), offset, limit, recordPrefix)
	if err != nil {
		return 0, 0, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return 0, 0, err
	}
	return int(asInt(r[0])), int(asInt(r[1])), nil
}

// --- idempotency keys ------------------------------------------------------

// KeyState is the current holder of an idempotency key.
type KeyState struct {
	Key   string
	Owner string
	// TTL is the time left; 0 when the key has no expiry.
	TTL time.Duration
}

// GetKey returns who holds key, or ok=false when nobody does.
func (s *Store) GetKey(ctx context.Context, key string) (KeyState, bool, error) {
	rk := s.keys.IdempotencyKey(key)
	pipe := s.rdb.Pipeline()
	get := pipe.Get(ctx, rk)
	ttl := pipe.PTTL(ctx, rk)
	_, _ = pipe.Exec(ctx)
	owner, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return KeyState{Key: key}, false, nil
	}
	if err != nil {
		return KeyState{}, false, err
	}
	st := KeyState{Key: key, Owner: owner}
	if d, err := ttl.Result(); err == nil && d > 0 {
		st.TTL = d
	}
	return st, true, nil
}

// ReleaseKey frees key only if owner still holds it.
func (s *Store) ReleaseKey(ctx context.Context, key, owner string) (bool, error) {
	v, err := s.runScript(ctx, s.scripts.release, []string{s.keys.IdempotencyKey(key)}, owner)
	if err != nil {
		return false, err
	}
	return asInt(v) == 1, nil
}

// ScanKeys pages through held idempotency keys matching glob with SCAN.
// It returns the user-visible keys and the next cursor (0 when done).
func (s *Store) ScanKeys(ctx context.Context, glob string, cursor uint64, count int64) ([]string, uint64, error) {
	ks, next, err := s.rdb.Scan(ctx, cursor, s.keys.IdempotencyKeyPattern(glob), count).Result()
	if err != nil {
		return nil, 0, err
	}
	for i, k := range ks {
		ks[i] = s.keys.TrimIdempotencyKey(k)
	}
	return ks, next, nil
}
