package task

import (
	"time"
)

// Spec is a task definition as plain data: what workers register in Redis
// (in a Registered) so that event ingestion, the HTTP API and the CLI
// evaluate exactly the expression and strategy the workers were built
// with. Client.Definition rebuilds the definition from it.
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
	// Priority is the task's default priority (absent: 1).
	Priority int `json:"priority,omitempty"`
	// Durability is the task's own acknowledgement level (absent: the
	// client's applies).
	Durability *DurabilitySpec `json:"durability,omitempty"`
	// RateLimits are the task's rate limits (see RateLimit).
	RateLimits []RateLimitSpec `json:"rateLimits,omitempty"`

	// Concurrency are the task's concurrency limits, in order (absent:
	// none).
	Concurrency []Concurrency `json:"concurrencyLimits,omitempty"`

	// DAG is a workflow's nodes, each by its task's name with the names
	// of its parents, and OnFailure its on-failure task (see Workflow).
	DAG       map[string][]string `json:"dag,omitempty"`
	OnFailure string              `json:"onFailure,omitempty"`
}

// Registered is a spec as a worker registered it.
type Registered struct {
	Spec         Spec      `json:"spec"`
	Hash         string    `json:"hash"`
	Worker       string    `json:"worker"`
	RegisteredAt time.Time `json:"registeredAt"`
}
