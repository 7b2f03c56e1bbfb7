// Package taskdef is what taskq itself does with a task's definition and
// is no part of package task's API: the spec a worker registers and the
// definition the client and the HTTP API rebuild from it, and the retry
// delay and key hold the worker and admission derive from the options.
package taskdef

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"time"

	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// Spec returns d as plain data, as a worker registers it.
func Spec(d *task.Definition) task.Spec {
	s := task.Spec{
		Name: d.Name, Retries: d.Retries, TimeoutMs: d.Timeout.Milliseconds(),
		BackoffInitialMs: d.Backoff.Initial.Milliseconds(), BackoffMaxMs: d.Backoff.Max.Milliseconds(),
		BackoffFactor: d.Backoff.Factor, BackoffJitter: d.Backoff.Jitter,
		OnEvents: d.OnEvents, MaxDeliveries: d.MaxDeliveries, OnConflict: string(d.OnConflict),
	}
	if d.Priority > 1 {
		s.Priority = d.Priority
	}
	s.Concurrency = append([]task.Concurrency(nil), d.Concurrency...)
	if dur := d.Durability; dur != nil {
		s.Durability = &task.DurabilitySpec{Replicas: dur.Replicas, TimeoutMs: dur.Timeout.Milliseconds(), LocalFsync: dur.LocalFsync}
	}
	if len(d.RateLimits) > 0 {
		s.RateLimits = make([]task.RateLimitSpec, len(d.RateLimits))
		for i, l := range d.RateLimits {
			s.RateLimits[i] = task.RateLimitSpec{Name: l.Name, Limit: l.Limit, PeriodUs: l.Period.Microseconds(), Units: l.Units, Key: l.Key,
				UnitsExpression: l.UnitsExpression, LimitExpression: l.LimitExpression}
		}
	}
	if w := d.Workflow; w != nil {
		s.DAG = make(map[string][]string, len(w.Nodes))
		for _, n := range w.Nodes {
			s.DAG[n.Task.Name] = append([]string{}, n.Parents...)
		}
		if w.OnFailure != nil {
			s.OnFailure = w.OnFailure.Name
		}
	}
	if i := d.Idempotency; i != nil {
		s.Expression, s.Strategy = i.Expression, i.Strategy
		s.TTLMs, s.FallbackTTLMs, s.RetainMs = i.TTL.Milliseconds(), i.FallbackTTL.Milliseconds(), i.Retain.Milliseconds()
	}
	return s
}

// Hash identifies the spec's content: two workers registering the same
// name with different hashes disagree about the task.
func Hash(s task.Spec) string {
	b, _ := json.Marshal(s) // field order is fixed by the struct
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Definition rebuilds a definition from registered data, validating and
// compiling it as task.NewDefinition does, with compiler c (nil: one with
// default limits).
func Definition(s task.Spec, c *idempotency.Compiler) (*task.Definition, error) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	opts := task.Options{
		Retries: s.Retries, Timeout: ms(s.TimeoutMs), OnEvents: s.OnEvents, MaxDeliveries: s.MaxDeliveries,
		OnConflict: task.ConflictPolicy(s.OnConflict), Priority: s.Priority,
		Backoff:  task.Backoff{Initial: ms(s.BackoffInitialMs), Max: ms(s.BackoffMaxMs), Factor: s.BackoffFactor, Jitter: s.BackoffJitter},
		Compiler: c,
	}
	if d := s.Durability; d != nil {
		opts.Durability = &task.Durability{Replicas: d.Replicas, Timeout: ms(d.TimeoutMs), LocalFsync: d.LocalFsync}
	}
	if len(s.RateLimits) > 0 {
		opts.RateLimits = make([]task.RateLimit, len(s.RateLimits))
		for i, l := range s.RateLimits {
			opts.RateLimits[i] = task.RateLimit{Name: l.Name, Limit: l.Limit, Period: time.Duration(l.PeriodUs) * time.Microsecond, Units: l.Units, Key: l.Key,
				UnitsExpression: l.UnitsExpression, LimitExpression: l.LimitExpression}
		}
	}
	if s.Strategy != "" {
		opts.Idempotency = &task.Idempotency{
			Expression: s.Expression, Strategy: s.Strategy,
			TTL: ms(s.TTLMs), FallbackTTL: ms(s.FallbackTTLMs), Retain: ms(s.RetainMs),
		}
	}
	opts.Concurrency = append([]task.Concurrency(nil), s.Concurrency...)
	return task.NewDefinition(s.Name, opts)
}

// Delay returns how long to wait before the retry that follows the n-th
// failure (n starts at 1): Initial * Factor^(n-1), capped at Max, with up
// to Jitter (a fraction) added at random.
func Delay(b task.Backoff, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(b.Initial) * math.Pow(b.Factor, float64(n-1))
	if b.Max > 0 && d > float64(b.Max) {
		d = float64(b.Max)
	}
	if b.Jitter > 0 {
		d += d * b.Jitter * rand.Float64()
	}
	return time.Duration(d)
}

// Hold is how long a claim of i's key lasts when it is made: the TTL (or
// debounce window), or the status strategy's fallback.
func Hold(i *task.Idempotency) time.Duration {
	if i.Strategy == task.StrategyTTL || i.Strategy == task.StrategyDebounce {
		return i.TTL
	}
	return i.FallbackTTL
}

// ConcurrencyGroups derives a run's concurrency groups from its JSON input
// and metadata, the i-th of d.Concurrency[i]: nil when d has no
// Concurrency, a *task.KeyError of kind task.KeyConcurrency when an
// expression fails.
func ConcurrencyGroups(d *task.Definition, input, meta []byte) ([]string, error) {
	return d.ConcurrencyGroups(input, meta)
}

// RateLimitKeys evaluates the key of each of d's rate limits on a run's
// JSON input and metadata: the i-th key is d.RateLimits[i]'s, "" for a
// limit without a key; a failed expression is a *task.KeyError of kind
// task.KeyRateLimit naming the limit.
func RateLimitKeys(d *task.Definition, input, meta []byte) ([]string, error) {
	return d.RateLimitKeys(input, meta)
}

// RateLimitUnits computes the units a run takes of each of d's rate limits
// and each limit (see task.Definition.RateLimitUnits).
func RateLimitUnits(d *task.Definition, input, meta []byte) (units, limits []int, err error) {
	return d.RateLimitUnits(input, meta)
}
