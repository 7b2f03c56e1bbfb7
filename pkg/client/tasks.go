package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// ErrTaskNotFound is returned for a task no worker has registered.
var ErrTaskNotFound = errors.New("task not registered")

// definitions caches definitions rebuilt from the registry, by content hash,
// so an expression is compiled once however often it is triggered.
type definitions struct {
	mu       sync.Mutex
	compiler *idempotency.Compiler
	byHash   map[string]*task.Definition
}

// tasks lists the task definitions workers have registered, by name.
func (c *Client) tasks(ctx context.Context) ([]task.Registered, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	m, err := c.store.ListTasks(ctx)
	if err != nil {
		return nil, c.unavailable(ctx, err)
	}
	out := make([]task.Registered, 0, len(m))
	for name, raw := range m {
		var r task.Registered
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("task %q: registry entry: %w", name, err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out, nil
}

// registeredTask returns the registration of one task.
func (c *Client) registeredTask(ctx context.Context, name string) (*task.Registered, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	raw, err := c.store.GetTask(ctx, name)
	if err != nil {
		return nil, c.unavailable(ctx, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, name)
	}
	var r task.Registered
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("task %q: registry entry: %w", name, err)
	}
	return &r, nil
}

// Definition returns the registered definition of a task, compiled, for
// triggering a task this process has no typed definition of.
func (c *Client) Definition(ctx context.Context, name string) (*task.Definition, error) {
	r, err := c.registeredTask(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.defs.get(r)
}

func (d *definitions) get(r *task.Registered) (*task.Definition, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if def, ok := d.byHash[r.Hash]; ok && def.Name == r.Spec.Name {
		return def, nil
	}
	if d.compiler == nil {
		c, err := idempotency.NewCompiler(idempotency.Options{})
		if err != nil {
			return nil, err
		}
		d.compiler, d.byHash = c, map[string]*task.Definition{}
	}
	def, err := taskdef.Definition(r.Spec, d.compiler)
	if err != nil {
		return nil, err
	}
	d.byHash[r.Hash] = def
	return def, nil
}
