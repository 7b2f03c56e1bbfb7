// Package worker runs the handlers of taskq tasks, in your own worker
// binaries.
//
// Make a Worker with New, register a typed handler for each task with
// Handle, then Run it:
//
//	w, err := worker.New(worker.Options{Concurrency: 20}) // Redis at $TASKQ_REDIS_URL
//	if err != nil {
//		return err
//	}
//	err = worker.Handle(w, orders.Charge, func(ctx worker.Context, o orders.Order) (orders.Receipt, error) {
//		id, err := payments.Charge(ctx, o.ID, o.Amount, ctx.StepID())
//		return orders.Receipt{ChargeID: id}, err
//	})
//	if err != nil {
//		return err
//	}
//	return w.Run(ctx) // until ctx ends or SIGINT/SIGTERM, then a graceful shutdown
//
// Run is Start, a wait for the context or a signal, and Shutdown; call
// Start and Shutdown yourself to fit a worker into a process that manages
// its own lifetime. The task definitions come from package task and are
// the ones the client triggers with, so both sides agree on the input
// type, the key expression and the strategy. Workers publish them in Redis
// when they start, for the HTTP API, event ingestion and the CLI.
//
// A handler gets a Context: a context.Context that ends when the run is
// cancelled, superseded or times out (context.Cause says which), with the
// run's ID, attempt and metadata, its signals (NextSignal, Signals) and a
// StepID that is the same on every attempt. Step runs a piece of the handler
// once per run and gives a retried attempt the stored result. A returned
// error fails the attempt; the run is retried with backoff until
// task.Options.Retries are used up.
//
// Delivery is at least once: a run whose worker dies is delivered again
// once its lease (Options.LeaseDuration) lapses, as a new attempt; the old
// attempt can no longer write a result or release a key. Make side effects
// idempotent with StepID or Step.
//
// Options set the concurrency, leases, retries' timing, the logger, cron
// schedules (Options.Schedules), middleware around every handler
// (Options.Middleware, e.g. for tracing), and HTTPAddr for /healthz,
// /readyz and /metrics (or mount Worker.Handler in your own server).
// Shutdown stops taking new runs, lets running handlers finish for
// ShutdownTimeout, then cancels the rest and gives their runs back to be
// delivered again.
//
// How the worker is built inside (its components and the order they start
// and stop in) is described in ARCHITECTURE.md.
package worker
