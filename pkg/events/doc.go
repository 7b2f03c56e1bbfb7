// Package events ingests events and triggers the tasks subscribed to them.
//
// A task subscribes by listing event keys in task.Options.OnEvents. Workers
// publish their task definitions in Redis when they start, so an Ingester
// in any process (a Go service, the HTTP server, the CLI) knows every
// subscription and evaluates exactly the expressions the workers were built
// with:
//
//	ing, err := events.New(c, events.Options{})
//	ev, err := ing.Push(ctx, "order.paid", json.RawMessage(`{"id":"o-1"}`), nil)
//	for _, r := range ev.Runs {
//		fmt.Println(r.Task, r.Outcome, r.RunID)
//	}
//
// For every subscribed task, Push derives the idempotency key with the
// event's payload as input and its metadata as additional_metadata, then
// stores the event and, for each task, claims the key, creates the run and
// queues it. When every run lives in the event's partition (always, in a
// namespace with one partition) one Lua script writes it all, or nothing.
// Otherwise the fan-out goes in steps: the event is stored with its pending
// fan-out, each task is triggered in its key's partition, idempotently on
// (event, task), and the outcomes are recorded on the event; a fan-out
// whose ingester dies midway is finished by a worker after FanoutGrace,
// and every task still gets exactly one run or one recorded collision (see
// docs/events.md).
//
// Where a direct trigger would fail with an idempotency collision, an event
// does not: the task gets no run, and the event records the existing run it
// was deduplicated to (OutcomeDeduplicated), whatever conflict policy the
// task has. Keys are namespace-wide, so two tasks of one event whose
// expressions yield the same string share one run: the first by task name
// creates it, the second is deduplicated to it. Prefix the expressions
// ("invoice:" + input.id) to give each task its own key. A task whose
// expression fails on the payload (a missing field, a key that is not a
// string) is recorded with OutcomeError and the message; the other tasks
// still run.
//
// PushMany sends a batch in one round trip after validating every event.
// Event records expire after Options.Retention (7 days by default); pushes
// also sweep expired entries out of the events index, so nothing grows
// without end. client.Inspector.GetEvent and ListEvents read events back.
package events
