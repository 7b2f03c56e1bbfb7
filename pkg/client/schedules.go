package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/task"
)

// SourceSchedule is the source of the runs a cron schedule fires: a tick
// that another scheduler fired first is recorded as a suppressed trigger
// from it (Inspector.ListSuppressed).
const SourceSchedule = "schedule"

var (
	// ErrScheduleNotFound is returned for a schedule the namespace does
	// not hold.
	ErrScheduleNotFound = errors.New("schedule not found")
	// ErrScheduleExists is returned by Schedules.Create for a name
	// already registered.
	ErrScheduleExists = errors.New("schedule already exists")
)

// Schedules registers, lists and acts on the namespace's cron schedules
// (docs/cron.md). Get it with Client.Schedules; it is safe for concurrent
// use.
type Schedules struct {
	c *Client
}

// Schedules returns the client's access to cron schedules.
func (c *Client) Schedules() *Schedules { return &Schedules{c: c} }

// ScheduleInfo is a registered schedule and its state.
type ScheduleInfo struct {
	// Schedule is the definition as registered, its key expression filled
	// in (Schedule.Paused is false: the state is Paused below).
	Schedule task.Schedule
	Paused   bool
	// Cursor is the latest tick fired, or when the schedule was registered
	// or resumed if that is later: the next tick to fire comes after it.
	Cursor  time.Time
	Created time.Time
	Updated time.Time
	// Next is the first tick after the later of Cursor and now: when the
	// schedule fires next, unless its misfire policy catches up missed
	// ticks first (zero when there is none).
	Next time.Time
}

// Create registers a new schedule; a name already registered is
// ErrScheduleExists, and a bad schedule a *task.ConfigError. The first
// tick to fire is the first after now; with sched.Paused it is registered
// paused.
func (s *Schedules) Create(ctx context.Context, sched task.Schedule) (*ScheduleInfo, error) {
	return s.save(ctx, sched, false)
}

// Put registers sched, or writes its new definition over the one
// registered under its name; a schedule already registered keeps its
// cursor and its paused state. Workers register their Options.Schedules
// so.
func (s *Schedules) Put(ctx context.Context, sched task.Schedule) (*ScheduleInfo, error) {
	return s.save(ctx, sched, true)
}

func (s *Schedules) save(ctx context.Context, sched task.Schedule, replace bool) (*ScheduleInfo, error) {
	cs, err := ticks.Compile(sched)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(recordOf(cs.Schedule))
	if err != nil {
		return nil, fmt.Errorf("schedule %q: encode: %w", sched.Name, err)
	}
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	written, _, err := s.c.store.SaveSchedule(ctx, sched.Name, raw, replace, sched.Paused, s.c.opts.Clock.Now())
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sched.Name, s.c.unavailable(ctx, err))
	}
	if !written {
		return nil, fmt.Errorf("%w: %q", ErrScheduleExists, sched.Name)
	}
	return s.Get(ctx, sched.Name)
}

// Get returns one schedule, or ErrScheduleNotFound.
func (s *Schedules) Get(ctx context.Context, name string) (*ScheduleInfo, error) {
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	r, err := s.c.store.GetSchedule(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", name, s.c.unavailable(ctx, err))
	}
	if r == nil {
		return nil, fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
	}
	return s.info(r)
}

// List returns every schedule of the namespace, by name. A record that no
// longer compiles (written by a newer version, say) fails the list with
// its *task.ConfigError.
func (s *Schedules) List(ctx context.Context) ([]*ScheduleInfo, error) {
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	rs, err := s.c.store.ListSchedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", s.c.unavailable(ctx, err))
	}
	out := make([]*ScheduleInfo, 0, len(rs))
	for i := range rs {
		info, err := s.info(&rs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func (s *Schedules) info(r *engine.ScheduleRecord) (*ScheduleInfo, error) {
	var rec scheduleRecord
	if err := json.Unmarshal(r.Definition, &rec); err != nil {
		return nil, fmt.Errorf("schedule %q: stored definition: %w", r.Name, err)
	}
	cs, err := ticks.Compile(rec.schedule())
	if err != nil {
		return nil, err
	}
	from := s.c.opts.Clock.Now()
	if r.Cursor.After(from) {
		from = r.Cursor
	}
	return &ScheduleInfo{
		Schedule: cs.Schedule, Paused: r.Paused, Cursor: r.Cursor, Created: r.Created, Updated: r.Updated,
		Next: cs.Next(from),
	}, nil
}

// SetPaused pauses a schedule (paused true): its ticks stop firing, though
// a tick being fired as it is paused may still fire; or resumes it
// (false): it fires again from its first tick after now, and the ticks it
// had while paused do not fire. A schedule the namespace does not hold is
// ErrScheduleNotFound.
func (s *Schedules) SetPaused(ctx context.Context, name string, paused bool) error {
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	ok, err := s.c.store.SetSchedulePaused(ctx, name, paused, s.c.opts.Clock.Now())
	if err != nil {
		return fmt.Errorf("schedule %q: %w", name, s.c.unavailable(ctx, err))
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
	}
	return nil
}

// Delete removes a schedule and its cursor; the runs its ticks created
// are left as they are. A tick being fired as it is deleted may still
// fire.
func (s *Schedules) Delete(ctx context.Context, name string) error {
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	ok, err := s.c.store.DeleteSchedule(ctx, name)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", name, s.c.unavailable(ctx, err))
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
	}
	return nil
}

// TriggerNow fires one run of a schedule now, outside its ticks, with
// the key its expression gives for the time now (schedule.time is now,
// to the millisecond): paused or not, and without moving its cursor. Like
// every trigger it returns a handle or an error, never both (a
// *DurabilityError's Run is the run it wrote).
func (s *Schedules) TriggerNow(ctx context.Context, name string) (*RunHandle, error) {
	info, err := s.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	cs, err := ticks.Compile(info.Schedule)
	if err != nil {
		return nil, err
	}
	return s.fire(ctx, cs, s.c.opts.Clock.Now().Truncate(time.Millisecond))
}

// fire triggers the run of one tick of a schedule: the schedule's task,
// input and metadata, under the tick's key (held KeyTTL, strategy ttl), in
// the one script that claims the key and creates the run. When the tick
// has fired before, by this or another scheduler, nothing is created and
// the error is an *IdempotencyCollisionError naming the tick's run; the
// trigger is recorded as suppressed with source SourceSchedule. A task no
// worker has registered is ErrTaskNotFound. fire does not move the
// cursor (see advance). The worker's scheduler fires ticks through
// clientlink.Link.FireTick.
func (s *Schedules) fire(ctx context.Context, cs *ticks.Compiled, tick time.Time) (*RunHandle, error) {
	sched := cs.Schedule
	key, err := ticks.Key(cs, tick)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: tick %s: %w", sched.Name, tick.UTC().Format(time.RFC3339), err)
	}
	def, err := s.c.Definition(ctx, sched.Task)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sched.Name, err)
	}
	// The run is the task's but for its key, which is the tick's: admitted
	// as a trigger of the task without a key, then given the tick's.
	opts := def.Options
	opts.Idempotency, opts.Compiler = nil, nil
	plain, err := task.NewDefinition(def.Name, opts)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sched.Name, err)
	}
	p, err := s.c.prepare(plain, sched.Input, sched.Metadata, task.ConflictReject, SourceSchedule, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sched.Name, err)
	}
	p.Key, p.Strategy, p.Hold, p.Retain = key, task.StrategyTTL, ticks.KeyTTL(cs.Schedule), 0
	if p.Durability, err = s.c.resolveDurability(def, nil); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sched.Name, err)
	}
	res, err := s.c.enqueue(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: trigger: %w", sched.Name, s.c.unavailable(ctx, err))
	}
	if res.Outcome == engine.TriggerRejected {
		return nil, s.c.collision(def, key, res.Owner)
	}
	h := s.c.triggered(p, res)
	if !s.c.acknowledged(def.Name, h, res.Ack) {
		return nil, notDurable(def.Name, h)
	}
	return h, nil
}

// advance records that tick fired: the schedule's cursor moves to it
// unless it is already at or past it; ErrScheduleNotFound when the
// schedule was deleted.
func (s *Schedules) advance(ctx context.Context, name string, tick time.Time) error {
	ctx, cancel := s.c.opCtx(ctx)
	defer cancel()
	_, ok, err := s.c.store.AdvanceSchedule(ctx, name, tick)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", name, s.c.unavailable(ctx, err))
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
	}
	return nil
}

// scheduleRecord is a schedule as stored in Redis (JSON); durations in ms.
type scheduleRecord struct {
	Name          string          `json:"name"`
	Task          string          `json:"task"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"timezone,omitempty"`
	Seconds       bool            `json:"seconds,omitempty"`
	Input         json.RawMessage `json:"input,omitempty"`
	Metadata      json.RawMessage `json:"additional_metadata,omitempty"`
	KeyExpression string          `json:"key_expression"`
	Misfire       string          `json:"misfire,omitempty"`
	MisfireMax    int             `json:"misfire_max,omitempty"`
	HorizonMS     int64           `json:"misfire_horizon_ms,omitempty"`
}

func recordOf(s task.Schedule) scheduleRecord {
	return scheduleRecord{
		Name: s.Name, Task: s.Task, Cron: s.Cron, TimeZone: s.TimeZone, Seconds: s.Seconds,
		Input: s.Input, Metadata: s.Metadata, KeyExpression: s.KeyExpression,
		Misfire: string(s.Misfire.Policy), MisfireMax: s.Misfire.Max, HorizonMS: s.Misfire.Horizon.Milliseconds(),
	}
}

func (r scheduleRecord) schedule() task.Schedule {
	return task.Schedule{
		Name: r.Name, Task: r.Task, Cron: r.Cron, TimeZone: r.TimeZone, Seconds: r.Seconds,
		Input: r.Input, Metadata: r.Metadata, KeyExpression: r.KeyExpression,
		Misfire: task.Misfire{Policy: task.MisfirePolicy(r.Misfire), Max: r.MisfireMax,
			Horizon: time.Duration(r.HorizonMS) * time.Millisecond},
	}
}
