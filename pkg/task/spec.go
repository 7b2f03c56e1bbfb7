package task

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/taskq/taskq/pkg/idempotency"
)

// Spec is a task definition as plain data: what workers register in Redis
// so that event ingestion, the HTTP API and the CLI evaluate exactly the
// expression and strategy the workers were built with.
type Spec struct {
	Name             string   `json:"name"`
	Expression       string   `json:"expression,omitempty"`
	Strategy         Strategy `json:"strategy,omitempty"`
	TTLMs            int64    `json:"ttlMs,omitempty"`
	FallbackTTLMs    int64    `json:"fallbackTtlMs,omitempty"`
	RetainMs         int64    `json:"retainMs,omitempty"`
	Retries          int      `json:"retries"`
	BackoffInitialMs int64    `json:"backoffInitialMs"`
	BackoffMaxMs     int64    `json:"backoffMaxMs,omitempty"`
	BackoffFactor    float64  `json:"backoffFactor"`
	BackoffJitter    float64  `json:"backoffJitter,omitempty"`
	TimeoutMs        int64    `json:"timeoutMs,omitempty"`
	OnEvents         []string `json:"onEvents,omitempty"`
	MaxDeliveries    int      `json:"maxDeliveries"`
	OnConflict       string   `json:"onConflict,omitempty"`
	// Durability is the task's own acknowledgement level (absent: the
	// client's applies).
	Durability *DurabilitySpec `json:"durability,omitempty"`
	// RateLimits are the task's rate limits (see RateLimit).
	RateLimits []RateLimitSpec `json:"rateLimits,omitempty"`

	// Concurrency is the task's concurrency limit (absent: none).
	Concurrency *ConcurrencySpec `json:"concurrency,omitempty"`
}

// ConcurrencySpec is a Concurrency as plain data.
type ConcurrencySpec struct {
	Expression string              `json:"expression"`
	MaxRuns    int                 `json:"maxRuns"`
	Strategy   ConcurrencyStrategy `json:"strategy"`
}

// Spec returns the definition as plain data.
func (d *Definition) Spec() Spec {
	s := Spec{
		Name: d.Name, Retries: d.Retries, TimeoutMs: d.Timeout.Milliseconds(),
		BackoffInitialMs: d.Backoff.Initial.Milliseconds(), BackoffMaxMs: d.Backoff.Max.Milliseconds(),
		BackoffFactor: d.Backoff.Factor, BackoffJitter: d.Backoff.Jitter,
		OnEvents: d.OnEvents, MaxDeliveries: d.MaxDeliveries, OnConflict: string(d.OnConflict),
		Durability: durabilitySpec(d.Durability),
		RateLimits: rateLimitSpecs(d.RateLimits),
	}
	if c := d.Concurrency; c != nil {
		s.Concurrency = &ConcurrencySpec{Expression: c.Expression, MaxRuns: c.MaxRuns, Strategy: c.Strategy}
	}
	if i := d.Idempotency; i != nil {
		s.Expression, s.Strategy = i.Expression, i.Strategy
		s.TTLMs, s.FallbackTTLMs, s.RetainMs = i.TTL.Milliseconds(), i.FallbackTTL.Milliseconds(), i.Retain.Milliseconds()
	}
	return s
}

// Hash identifies the spec's content: two workers registering the same
// name with different hashes disagree about the task.
func (s Spec) Hash() string {
	b, _ := json.Marshal(s) // field order is fixed by the struct
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// FromSpec rebuilds a definition from registered data, validating and
// compiling it as NewDefinition does. c may be nil.
func FromSpec(s Spec, c *idempotency.Compiler) (*Definition, error) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	opts := Options{
		Retries: s.Retries, Timeout: ms(s.TimeoutMs), OnEvents: s.OnEvents, MaxDeliveries: s.MaxDeliveries,
		OnConflict: ConflictPolicy(s.OnConflict), Durability: s.Durability.durability(),
		Backoff:    Backoff{Initial: ms(s.BackoffInitialMs), Max: ms(s.BackoffMaxMs), Factor: s.BackoffFactor, Jitter: s.BackoffJitter},
		Compiler:   c,
		RateLimits: fromRateLimitSpecs(s.RateLimits),
	}
	if s.Strategy != "" {
		opts.Idempotency = &Idempotency{
			Expression: s.Expression, Strategy: s.Strategy,
			TTL: ms(s.TTLMs), FallbackTTL: ms(s.FallbackTTLMs), Retain: ms(s.RetainMs),
		}
	}
	if c := s.Concurrency; c != nil {
		opts.Concurrency = &Concurrency{Expression: c.Expression, MaxRuns: c.MaxRuns, Strategy: c.Strategy}
	}
	return NewDefinition(s.Name, opts)
}

// Registered is a spec as a worker registered it.
type Registered struct {
	Spec         Spec      `json:"spec"`
	Hash         string    `json:"hash"`
	Worker       string    `json:"worker"`
	RegisteredAt time.Time `json:"registeredAt"`
}
