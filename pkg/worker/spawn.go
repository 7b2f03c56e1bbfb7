package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// ErrChildMismatch says a handler spawned, under a name its run had used
// before (one given with client.ChildName, or its position among the
// unnamed spawns), a child of another task or idempotency key than the
// child recorded then: the handler's spawns are not the same from one
// attempt to the next (their order changed, or the key a child's task
// derives from its input). The child recorded before is not taken for the
// new one, nor a second child made: the spawn fails, and the attempt fails
// for good if the handler returns the error (it is not retried).
var ErrChildMismatch = engine.ErrChildMismatch

// Spawn triggers a run of child, a child of the handler's run, and
// returns a reference to it: its Result waits for the child's result
// (client.WaitAll waits for many).
//
// A child is spawned once per parent run and name, however often its
// parent is retried, redelivered after its worker died, or replayed: the
// name is the one given with client.ChildName, or else the call's
// position among the handler's spawns without a name ("#0", "#1", ... in
// the order they are made, so a handler that relies on positions must
// spawn in the same order on every attempt; name the children a handler
// spawns in an order that may change). A spawn that fails has taken its
// position all the same: return the error rather than spawn again in the
// same attempt. A later spawn under a name used before returns the child
// spawned then, even one that has ended, without triggering anything.
//
// The child's idempotency key is taskq:child:<parent run ID>/<name>,
// followed by "/" and the key its task's own expression derives when it
// has one; its task's strategy applies to that key (a task without an
// expression holds it with the status strategy). A spawn whose task or
// key differs from the child recorded under its name fails with
// ErrChildMismatch. opts are those of a trigger (client.WithMetadata,
// client.RunAt, client.WithDurability, ...) but client.OnConflict, plus
// client.ChildName and client.Detached: by default a child is cancelled
// with its parent (see client.RunHandle.Cancel).
//
// ctx must be the Context the handler was given (or one made from it with
// WithContext). A run that has ended (cancelled while its handler runs)
// spawns nothing: the error matches task.ErrRunCancelled then.
func Spawn[I, O any](ctx Context, child *task.Task[I, O], input I, opts ...client.RunOption) (*client.RunRef[O], error) {
	refs, err := spawn(ctx, child, []I{input}, false, opts)
	var item *client.BatchItemError
	if errors.As(err, &item) && item.Index == 0 {
		err = item.Err
	}
	if len(refs) == 0 || refs[0] == nil {
		return nil, err
	}
	return refs[0], err
}

// SpawnMany spawns a child of child for each input, as Spawn does, in one
// round trip for all of them (three when some are new: their records, their
// triggers, and a mark that they were created), and returns references to
// them in the order of inputs. Without client.ChildName they take as many
// positions among the handler's unnamed spawns as there are inputs; with
// it, the i-th child is named "<name>#<i>". An input that cannot be
// triggered fails the call before anything is written, as a
// *client.BatchItemError naming its index; a child whose trigger failed
// afterwards has a nil reference and a *client.BatchItemError in the
// error, and is triggered by the next spawn of it (the next attempt).
func SpawnMany[I, O any](ctx Context, child *task.Task[I, O], inputs []I, opts ...client.RunOption) ([]*client.RunRef[O], error) {
	return spawn(ctx, child, inputs, true, opts)
}

func spawn[I, O any](ctx Context, child *task.Task[I, O], inputs []I, many bool, opts []client.RunOption) ([]*client.RunRef[O], error) {
	rc := runContextOf(ctx)
	if rc == nil || rc.spawner == nil {
		return nil, errors.New("worker: Spawn needs the Context the handler was given")
	}
	raws := make([][]byte, len(inputs))
	for i, in := range inputs {
		b, err := json.Marshal(in)
		if err != nil {
			err = fmt.Errorf("task %q: encode input: %w", child.Name(), err)
			if many {
				err = &client.BatchItemError{Index: i, Err: err}
			}
			return nil, err
		}
		raws[i] = b
	}
	c, link, err := rc.spawner.client()
	if err != nil {
		return nil, err
	}
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	ids, err := link.Spawn(ctx, clientlink.SpawnRequest{Def: child.Definition(), Parent: rc.runID, Inputs: raws, Many: many,
		Options: anyOpts, Position: rc.reservePositions})
	switch {
	case errors.Is(err, engine.ErrChildMismatch):
		return nil, NonRetryable(err)
	case errors.Is(err, engine.ErrRunEnded):
		if cause := context.Cause(ctx); cause != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return nil, err
	case len(ids) == 0:
		return nil, err
	}
	refs := make([]*client.RunRef[O], len(ids))
	for i, id := range ids {
		refs[i] = client.Ref[O](c, id)
	}
	for _, item := range batchItems(err) {
		if item.Index >= 0 && item.Index < len(refs) {
			refs[item.Index] = nil
		}
	}
	if errors.Is(context.Cause(ctx), task.ErrRunCancelled) {
		// The run was cancelled while it spawned: the cascade may have
		// looked before these children were created.
		rc.spawner.cancelChildren(rc.runID)
	}
	return refs, err
}

// batchItems lists the *client.BatchItemError values err joins.
func batchItems(err error) []*client.BatchItemError {
	var out []*client.BatchItemError
	var item *client.BatchItemError
	if errors.As(err, &item) {
		out = append(out, item)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		out = out[:0]
		for _, e := range j.Unwrap() {
			if errors.As(e, &item) {
				out = append(out, item)
			}
		}
	}
	return out
}

// runContextOf is the runContext under ctx, a handler's Context or one
// WithContext made from it; nil for any other.
func runContextOf(ctx Context) *runContext {
	switch c := ctx.(type) {
	case *runContext:
		return c
	case derivedContext:
		return runContextOf(c.Context)
	}
	return nil
}

// reservePositions takes the next n positions of the handler's unnamed
// spawns and returns the first.
func (c *runContext) reservePositions(n int) int {
	return int(c.positions.Add(int64(n))) - n
}

// spawner is the client a worker's handlers spawn children with, made
// when a handler first spawns (most workers never do) and closed when the
// worker shuts down.
type spawner struct {
	redis      redis.UniversalClient
	namespace  string
	partitions int
	opTimeout  time.Duration
	clock      task.Clock
	log        *slog.Logger

	mu     sync.Mutex
	c      *client.Client
	link   *clientlink.Link
	closed bool
}

// client returns the spawner's client, made on first use.
func (s *spawner) client() (*client.Client, *clientlink.Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, errors.New("worker: spawn: the worker has shut down")
	case s.c != nil:
		return s.c, s.link, nil
	}
	c, err := client.New(client.Options{
		Redis: s.redis, Namespace: s.namespace, Partitions: s.partitions, OperationTimeout: s.opTimeout,
		// As the scheduler's client (see there): the worker's guard
		// watches this Redis already, and routes go-redis's lines.
		AllowEvictingRedis: true, RedisCheckInterval: -1, KeepRedisLogger: true,
		Clock: s.clock, Logger: slog.New(errorsOnly{s.log.Handler()}),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("worker: spawn: %w", err)
	}
	s.c, s.link = c, clientlink.Of(c)
	return s.c, s.link, nil
}

// cancelChildren cancels the children of runID, a run that was cancelled
// (see spawn); what it cannot do, a worker's janitor does later.
func (s *spawner) cancelChildren(runID string) {
	_, link, err := s.client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	if _, err := link.Engine.CancelChildren(ctx, runID, s.clock.Now()); err != nil {
		s.log.Warn("taskq: cancelling the children of a cancelled run failed; a worker cancels them later",
			"run", runID, "err", err)
	}
}

// close closes the client, once no handler runs.
func (s *spawner) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.c != nil {
		_ = s.c.Close()
	}
}
