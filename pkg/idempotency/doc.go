// Package idempotency derives a run's idempotency key from its input and
// metadata with a CEL expression, as Hatchet does.
//
// Every trigger of a task that declares an expression, whether a direct call,
// an ingested event or an HTTP request, passes through here first: the
// expression turns the run's JSON input (the variable input) and its metadata
// (additional_metadata) into a string, and the Redis store then claims that
// string atomically or reports the run that already owns it. A task is
// deduplicated only as well as its key is computed, so this package is strict
// about what counts as a key: it must be a non-empty string no longer than
// the configured limit. Anything else fails the trigger with an *Error
// that names the expression and what went wrong, before anything is claimed
// or created.
//
// Expressions may use the CEL strings extension and checksum(string), the
// lowercase hex SHA-256 of its argument, for keys built from long or
// sensitive values:
//
//	input.id
//	"order:" + input.order.id + ":" + additional_metadata.tenant
//	checksum(input.email.lowerAscii())
//
// A Compiler checks an expression once, when a task is defined, so an
// expression that does not parse or type-check fails the definition rather
// than each trigger, and caches the result. CompileFor also checks it
// against the JSON shape of the task's Go input type (typed.go, shape.go),
// so a field the type does not have fails the definition too; evaluation is
// the same either way.
//
// Evaluation is bounded so that one expression or input cannot stall the
// trigger path or exhaust memory: every call that can build more than its
// arguments or work longer than their length checks, before it runs, what it
// will cost and build against the compiler's CostLimit, MaxStringBytes and
// MaxListElements (Options), and every call is charged for what it reads; a
// refusal is an *Error naming the function and the limit. Every failure is
// an *Error, whose Kind says what went wrong.
//
// Keys are derived on every trigger, so two common shapes avoid most of the
// interpreter's work: a plain field path such as input.id is read straight
// from the maps, and straight-line string building skips cel-go's
// step-by-step cost accounting when the input is provably too small to reach
// the limit. Both give exactly the results and errors CEL would give.
package idempotency
