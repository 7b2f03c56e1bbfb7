package events

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/admission"
)

// subscriber is a registered task that runs on an event key. Its Err is
// set when its registered definition cannot be rebuilt here; every event
// of the key then records it for the task.
type subscriber = admission.Subscriber

// subscriptions caches which registered tasks run on which event key, so a
// burst of pushes reads the registry once. The cache is short-lived: a
// worker that registers a new subscription is seen within ttl.
type subscriptions struct {
	ttl time.Duration

	mu      sync.Mutex
	loaded  time.Time
	byEvent map[string][]subscriber
}

// subscribers returns the tasks subscribed to key, by task name.
func (i *Ingester) subscribers(ctx context.Context, key string) ([]subscriber, error) {
	s := &i.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.byEvent == nil || s.ttl < 0 || now.Sub(s.loaded) >= s.ttl {
		m, err := i.loadSubscriptions(ctx)
		if err != nil {
			return nil, err
		}
		s.byEvent, s.loaded = m, now
	}
	return s.byEvent[key], nil
}

func (i *Ingester) loadSubscriptions(ctx context.Context) (map[string][]subscriber, error) {
	regs, err := i.c.Inspector().ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string][]subscriber{}
	for _, r := range regs {
		if len(r.Spec.OnEvents) == 0 {
			continue
		}
		sub := subscriber{Name: r.Spec.Name}
		// Definition compiles once per content hash and caches the result.
		sub.Def, sub.Err = i.c.Definition(ctx, r.Spec.Name)
		if sub.Err != nil {
			if ctx.Err() != nil {
				return nil, sub.Err
			}
			i.log.Warn("taskq: a registered task subscribed to events cannot be built; its events record the error",
				"task", r.Spec.Name, "hash", r.Hash, "err", sub.Err)
		}
		seen := map[string]bool{}
		for _, ev := range r.Spec.OnEvents {
			if !seen[ev] {
				seen[ev] = true
				m[ev] = append(m[ev], sub)
			}
		}
	}
	for _, subs := range m {
		sort.Slice(subs, func(a, b int) bool { return subs[a].Name < subs[b].Name })
	}
	return m, nil
}
