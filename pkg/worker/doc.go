// Package worker runs the handlers of taskq tasks.
//
// A Worker reads the streams of its registered tasks through a consumer
// group, as many runs at a time as it has free slots (Concurrency). Each
// delivery starts an attempt in one Lua script, which returns the attempt
// number: the fencing token every later write of that attempt carries.
//
// The worker's duties are small components, each in a file of its name,
// sharing one start/stop shape (startstop.go): the registrar (consumer
// groups and the task registry, kept up if Redis loses them), the canceller
// (cancels a handler's context when its run is cancelled or superseded;
// Start returns once Redis has confirmed its subscription), the processor
// (runs handlers and records their outcomes), the heartbeater (renews
// leases; a lease is the delivery's idle time in the group's pending
// list), the forwarder (queues retries and debounced runs when due), the
// janitor (sweeps expired index entries), the recoverer (takes over
// deliveries whose lease lapsed) and the fetcher (reads new deliveries).
// lifecycle.go wires them and gives, with the reasons, the order in which
// Start starts them and Shutdown stops them. The path of a run: fetcher.go
// (read) → processor.go (dispatch, process: the handler runs) →
// processor.go (finish: the slot goes to the next run while the outcome
// is recorded).
//
// Shutdown stops fetching, lets handlers finish for ShutdownTimeout, then
// cancels the rest and gives their runs back.
//
// Delivery is at least once: a run whose worker dies is redelivered after
// its lease lapses, with a new attempt number; the stale attempt can no
// longer write a result or release a key. Context.StepID and Step give
// handlers identifiers and results that are stable across attempts.
package worker
