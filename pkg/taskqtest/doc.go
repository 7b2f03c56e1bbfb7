// Package taskqtest lets an application's own tests exercise its taskq tasks
// with nothing installed: no Redis server, no worker process.
//
// New gives a test a Harness: an embedded Redis (miniredis) of its own, a
// client connected to it, and a clock, all closed when the test ends.
// Hand Harness.Client to the code under test, then check what it did:
//
//	func TestSignupSendsWelcome(t *testing.T) {
//		h := taskqtest.New(t)
//		if err := app.Signup(ctx, h.Client(), "ada@example.com"); err != nil {
//			t.Fatal(err)
//		}
//		r := taskqtest.RequireTriggered(t, h, app.SendWelcome,
//			taskqtest.WithKey("welcome:ada@example.com"))
//		// r.Input is an app.Signup, decoded; r.Info is the run's record.
//	}
//
// # Asserting on triggers
//
// RequireTriggered and RequireTriggeredN (n = 0: not triggered) look at
// the runs of a task that were accepted, whatever their status, and narrow them
// with matches: WithInput (equal as JSON), Where (a func of the typed
// input), WithKey (the idempotency key its expression derived) and
// WithStatus. A trigger rejected as a duplicate created no run, so
// RequireTriggeredN(t, h, task, 1) after two identical triggers checks the
// deduplication. A failed assertion lists the runs that were triggered
// instead. Runs lists them all.
//
// # Running the handlers
//
// Two ways, both through a real worker (the path a run takes in
// production: delivery, attempt, handler, outcome, key release):
//
//   - Work runs the task's queued runs with a handler and returns once they
//     are done, with their outcomes: the test decides when runs are worked
//     and sees each result.
//   - Harness.StartWorker runs a worker in the background for the rest of
//     the test (Options.Worker tailors its options), stopped gracefully at
//     its end, as the application's worker binary would: the code under test can trigger with client.Run and
//     wait for the result.
//
// Handlers run on worker goroutines: they report problems by returning an
// error, not with t.Fatal.
//
// # Time
//
// Time stands still in a harness until Harness.Advance moves it. The
// client and workers tell the time by the harness's clock, and Advance moves
// it together with the expiry of every Redis key, so a test steps through
// TTL windows, retain windows, retry backoffs, debounce windows and run
// retention without sleeping: advance past a key's window and the next
// trigger is accepted; advance past a backoff and the retry is due. A
// retry is never due until the test advances past its backoff.
//
// # What it is not
//
// miniredis runs taskq's Lua scripts as Redis does, and taskq's own tests
// run against both a real Redis server and miniredis; a harness is for testing an application's use of taskq, not Redis itself
// (its persistence, memory limits, cluster). Leases are measured by Redis
// in real time; to test what happens when a worker dies mid-run, use a real
// Redis.
package taskqtest
