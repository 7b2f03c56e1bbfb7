package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// ScheduleRefreshDefault is how often a scheduler reads the namespace's
// schedules again when no tick is due sooner, so that schedules made,
// paused or deleted elsewhere (the CLI, the HTTP API) are followed.
const ScheduleRefreshDefault = 5 * time.Second

// scheduleRetry is how soon a scheduler tries again after a failed call.
const scheduleRetry = time.Second

// scheduler fires the ticks of the namespace's cron schedules. Any number
// of workers run one: each tick is fired with a key derived from the
// schedule and the tick, claimed in the script that creates the run, so
// only the first scheduler to fire a tick creates its run and the others
// meet its key. After a tick fires, the schedule's cursor moves to it
// (never back), which bounds what a scheduler tries: only ticks after the
// cursor, and of those only what the misfire policy lets fire. It reads
// the schedules on every wake, so a scheduler that was stopped (SIGSTOP)
// sees the cursor as it is now, and sleeps until the next tick of any
// schedule or ScheduleRefresh, whichever comes first.
type scheduler struct {
	startStop
	redis      redis.UniversalClient
	namespace  string
	partitions int
	register   []task.Schedule
	refresh    time.Duration
	opTimeout  time.Duration
	clock      task.Clock
	log        *slog.Logger

	c      *client.Client
	scheds *client.Schedules
	link   *clientlink.Link
	closed sync.Once
}

// Start registers the worker's schedules (Put: a schedule registered
// before keeps its cursor and paused state) and starts the loop, the first
// pass made now.
func (s *scheduler) Start(ctx context.Context) error {
	if err := s.canStart(); err != nil {
		return err
	}
	c, err := client.New(client.Options{
		Redis: s.redis, Namespace: s.namespace, Partitions: s.partitions, OperationTimeout: s.opTimeout,
		// The worker's guard watches this Redis already, refused it at
		// Start if it may evict keys and the worker does not accept the
		// risk, and warned of it if it does: this client's guard says
		// nothing more (its warnings are below errorsOnly's level).
		AllowEvictingRedis: true, RedisCheckInterval: -1,
		Clock: s.clock, Logger: slog.New(errorsOnly{s.log.Handler()}),
	})
	if err != nil {
		return err
	}
	s.c, s.scheds, s.link = c, c.Schedules(), clientlink.Of(c)
	for _, sc := range s.register {
		if _, err := s.scheds.Put(ctx, sc); err != nil {
			_ = c.Close()
			return err
		}
	}
	if err := s.begin(s.loop); err != nil {
		_ = c.Close()
		return err
	}
	return nil
}

// Stop ends the loop, then closes the scheduler's client.
func (s *scheduler) Stop() {
	s.startStop.Stop()
	s.closed.Do(func() {
		if s.c != nil {
			_ = s.c.Close()
		}
	})
}

func (s *scheduler) loop(quit <-chan struct{}) {
	wait := time.Duration(0)
	for sleep(quit, wait) {
		wait = s.pass(quit)
	}
}

// pass fires what is due in every schedule and returns how long to wait
// for the next tick of any of them, at most refresh.
func (s *scheduler) pass(quit <-chan struct{}) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	infos, err := s.scheds.List(ctx)
	cancel()
	if err != nil {
		s.log.Warn("taskq: reading the cron schedules failed", "err", err)
		return scheduleRetry
	}
	wait := s.refresh
	for _, info := range infos {
		select {
		case <-quit:
			return 0
		default:
		}
		if info.Paused {
			continue
		}
		wait = min(wait, s.fire(info))
	}
	return max(wait, time.Millisecond)
}

// fire fires the ticks of one schedule that are due and returns how long
// until its next tick.
func (s *scheduler) fire(info *client.ScheduleInfo) time.Duration {
	name := info.Schedule.Name
	cs, err := ticks.Compile(info.Schedule)
	if err != nil {
		s.log.Warn("taskq: a cron schedule does not compile", "schedule", name, "err", err)
		return s.refresh
	}
	now := s.clock.Now()
	for _, tick := range ticks.Due(cs, info.Cursor, now) {
		// Checked again just before the trigger: a tick older than the
		// horizon may have a key that expired, and is never tried.
		if !ticks.Fresh(cs, tick, s.clock.Now()) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
		err := s.link.FireTick(ctx, cs, tick)
		switch {
		case errors.Is(err, client.ErrIdempotencyCollision):
			// Another scheduler fired it first: its run is the tick's.
		case errors.Is(err, client.ErrTaskNotFound):
			// No worker registered the task yet: try again at the next
			// refresh, while the tick is within its horizon.
			cancel()
			s.log.Warn("taskq: a cron tick's task is not registered", "schedule", name, "task", info.Schedule.Task, "tick", tick)
			return s.refresh
		case err != nil && !errors.Is(err, client.ErrNotDurable):
			// A tick whose run was created but not durably acknowledged
			// has fired all the same.
			cancel()
			s.log.Warn("taskq: firing a cron tick failed", "schedule", name, "tick", tick, "err", err)
			return scheduleRetry
		}
		err = s.link.AdvanceSchedule(ctx, name, tick)
		cancel()
		if errors.Is(err, client.ErrScheduleNotFound) {
			return s.refresh
		}
		if err != nil {
			s.log.Warn("taskq: recording a cron tick failed", "schedule", name, "tick", tick, "err", err)
			return scheduleRetry
		}
		if info.Cursor.Before(tick) {
			info.Cursor = tick
		}
	}
	next := cs.Next(maxTime(info.Cursor, now))
	if next.IsZero() {
		return s.refresh
	}
	return next.Sub(s.clock.Now())
}

// validateSchedules checks Options.Schedules before anything starts: each
// compiles (a *task.ConfigError otherwise), and no name comes twice.
func validateSchedules(ss []task.Schedule) error {
	if len(ss) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, sc := range ss {
		if err := sc.Validate(); err != nil {
			return err
		}
		if seen[sc.Name] {
			return fmt.Errorf("worker: schedule %q is in Schedules twice", sc.Name)
		}
		seen[sc.Name] = true
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// errorsOnly passes on the records of its handler at level error and
// above.
type errorsOnly struct{ slog.Handler }

// Enabled reports whether the level is error or above, and the handler's.
func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}

// WithAttrs keeps the filter on the handler with attrs.
func (h errorsOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return errorsOnly{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the filter on the handler with the group.
func (h errorsOnly) WithGroup(name string) slog.Handler { return errorsOnly{h.Handler.WithGroup(name)} }
