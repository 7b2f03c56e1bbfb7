package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// registryStore is what the registrar reads and writes in Redis.
type registryStore interface {
	RecordPartitions(ctx context.Context) error
	EnsureGroup(ctx context.Context, task string) error
	RegisterTask(ctx context.Context, name string, record []byte, replace bool) ([]byte, error)
	MissingTasks(ctx context.Context, names []string) ([]string, error)
}

// registrar sets up in Redis what the worker's tasks need: each task's
// consumer group, and its definition in the task registry, so that event
// ingestion, the HTTP API and the CLI use the same expressions. Once
// started it checks every interval that the registry still holds the
// tasks, and registers again those it lost; the fetcher has it restore
// everything at once when a read finds the groups gone.
type registrar struct {
	startStop
	store    registryStore
	defs     []*task.Definition
	consumer string
	conflict definitionConflict
	interval time.Duration
	// opTimeout bounds each check made after Start.
	opTimeout time.Duration
	clock     task.Clock
	log       *slog.Logger
}

// Start creates the consumer groups and registers the definitions; it
// returns once Redis holds them, or with a *DefinitionConflictError under
// definitionRefuse.
func (r *registrar) Start(ctx context.Context) error {
	if err := r.canStart(); err != nil {
		return err
	}
	for _, d := range r.defs {
		if err := r.store.EnsureGroup(ctx, d.Name); err != nil {
			return fmt.Errorf("worker: create consumer group for %q: %w", d.Name, err)
		}
	}
	if err := r.registerDefinitions(ctx); err != nil {
		return err
	}
	return r.begin(r.keepRegistered)
}

// registerDefinitions publishes the definitions, replacing or refusing a
// different one registered before as r.conflict says.
func (r *registrar) registerDefinitions(ctx context.Context) error {
	for _, d := range r.defs {
		rec, raw, err := r.record(d)
		if err != nil {
			return err
		}
		replace := r.conflict == definitionReplace
		prevRaw, err := r.store.RegisterTask(ctx, d.Name, raw, replace)
		if err != nil {
			return fmt.Errorf("worker: register task %q: %w", d.Name, err)
		}
		if prevRaw == nil {
			continue
		}
		var prev task.Registered
		if err := json.Unmarshal(prevRaw, &prev); err != nil || prev.Hash == rec.Hash {
			continue
		}
		conflict := &DefinitionConflictError{Task: d.Name, RegisteredHash: prev.Hash, RegisteredBy: prev.Worker, LocalHash: rec.Hash}
		if !replace {
			return conflict
		}
		r.log.Warn("taskq: replaced a different registered definition of the task; workers running the old one still use it",
			"task", d.Name, "previous_hash", prev.Hash, "previous_worker", prev.Worker, "hash", rec.Hash)
	}
	return nil
}

// record is the registry entry of d, and its JSON.
func (r *registrar) record(d *task.Definition) (task.Registered, []byte, error) {
	spec := taskdef.Spec(d)
	rec := task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: r.consumer, RegisteredAt: r.clock.Now().UTC()}
	raw, err := json.Marshal(rec)
	return rec, raw, err
}

// restore puts back what Redis lost of this worker's set-up, as after a
// restart without persistence or a flush: the namespace's partition count,
// each task's consumer groups and each missing registration. A registration present is left as it is,
// whoever made it, so workers of two versions in a rolling deploy do not
// overwrite each other; only an entry that is gone is written again.
func (r *registrar) restore(ctx context.Context) error {
	if err := r.store.RecordPartitions(ctx); err != nil {
		return fmt.Errorf("worker: record the namespace's partitions: %w", err)
	}
	for _, d := range r.defs {
		if err := r.store.EnsureGroup(ctx, d.Name); err != nil {
			return fmt.Errorf("worker: create consumer group for %q: %w", d.Name, err)
		}
	}
	return r.registerMissing(ctx)
}

// registerMissing registers again the tasks the registry has lost.
func (r *registrar) registerMissing(ctx context.Context) error {
	names := make([]string, len(r.defs))
	byName := make(map[string]*task.Definition, len(r.defs))
	for i, d := range r.defs {
		names[i], byName[d.Name] = d.Name, d
	}
	missing, err := r.store.MissingTasks(ctx, names)
	if err != nil {
		return fmt.Errorf("worker: read task registry: %w", err)
	}
	if len(missing) > 0 {
		// Redis may have lost the meta record with the registry.
		if err := r.store.RecordPartitions(ctx); err != nil {
			return fmt.Errorf("worker: record the namespace's partitions: %w", err)
		}
	}
	for _, n := range missing {
		d := byName[n]
		if d == nil {
			continue // not one of ours
		}
		_, raw, err := r.record(d)
		if err != nil {
			return err
		}
		prev, err := r.store.RegisterTask(ctx, n, raw, false)
		if err != nil {
			return fmt.Errorf("worker: register task %q: %w", n, err)
		}
		if prev == nil {
			r.log.Warn("taskq: task was missing from the registry (did Redis lose its data?); registered it again", "task", n)
		}
	}
	return nil
}

// keepRegistered checks every interval that the registry still holds the
// tasks, and registers again those it lost. A read of the streams that
// fails with NOGROUP restores at once (see fetcher); this catches a
// registry lost while the streams stayed, or while no read was made (every
// handler slot busy).
func (r *registrar) keepRegistered(quit <-chan struct{}) {
	for sleep(quit, r.interval) {
		ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
		if err := r.registerMissing(ctx); err != nil {
			r.log.Warn("taskq: checking the task registry failed", "err", err)
		}
		cancel()
	}
}
