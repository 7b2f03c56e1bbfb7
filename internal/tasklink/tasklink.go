// Package tasklink lets taskq's own packages evaluate what a
// *task.Definition compiled that is no part of package task's API: its
// concurrency and rate-limit key expressions (admission refuses a trigger
// they fail on, the worker places a run by them when it starts). Package
// task sets the functions when it is initialised, as this package cannot
// import it; internal/taskdef gives them their types.
package tasklink

// ConcurrencyGroup derives a run's concurrency group from its JSON input
// and metadata, for def, a *task.Definition: "" when the task has no
// concurrency limit, a *task.KeyError of kind task.KeyConcurrency when the
// expression fails.
var ConcurrencyGroup func(def any, input, meta []byte) (string, error)

// RateLimitKeys evaluates the key of each of def's rate limits (def is a
// *task.Definition) on a run's JSON input and metadata: the i-th key is
// RateLimits[i]'s, "" for a limit without a key; a failed expression is a
// *task.KeyError of kind task.KeyRateLimit naming the limit.
var RateLimitKeys func(def any, input, meta []byte) ([]string, error)
