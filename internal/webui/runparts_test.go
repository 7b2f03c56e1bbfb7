package webui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// failAttempt begins the next attempt of run (a queued run of the test
// task, which no worker runs) for worker and ends it as a retry with
// errMsg, as a worker whose handler failed would. Other deliveries read on
// the way stay pending, their runs queued.
func (e *env) failAttempt(ctx context.Context, run, worker, errMsg string) {
	e.t.Helper()
	st := clientlink.Store(e.c)
	part, ok := engine.RunPartition(run)
	if !ok {
		e.t.Fatalf("run %s names no partition", run)
	}
	if err := st.EnsureGroup(ctx, orderTask.Name()); err != nil {
		e.t.Fatal(err)
	}
	ds, err := st.ReadGroup(ctx, part, worker, []string{orderTask.Name()}, 100, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	ds = slices.DeleteFunc(ds, func(d engine.Delivery) bool { return d.RunID != run })
	if len(ds) != 1 {
		e.t.Fatalf("no delivery of run %s", run)
	}
	now := time.Now()
	sts, errs := st.StartBatch(ctx, worker, now, ds)
	if errs[0] != nil || !sts[0].Started {
		e.t.Fatalf("start = %+v, %v", sts[0], errs[0])
	}
	frs, errs := st.FinishBatch(ctx, []*engine.FinishParams{{RunID: run, Attempt: sts[0].Attempt, Outcome: engine.OutcomeRetry,
		Payload: []byte(errMsg), Now: now.Add(time.Millisecond), RetryAt: now.Add(time.Hour)}})
	if errs[0] != nil || !frs[0].Written {
		e.t.Fatalf("retry = %+v, %v", frs[0], errs[0])
	}
}

// The run page shows each attempt with its worker and error, the signals
// sent to the run and its durable steps, and a timeline with each attempt;
// every value a user or a handler wrote is escaped.
func TestRunPageShowsAttemptsSignalsAndSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "parts-1"})
	admin := e.browser()
	admin.signIn(testToken)

	p := admin.get("/ui/runs/" + run)
	for _, want := range []string{"No attempt has begun yet.", "No signal was sent to this run.", "This run completed no durable step."} {
		if !strings.Contains(p.body, want) {
			t.Errorf("a queued run's page does not say %q", want)
		}
	}

	e.failAttempt(ctx, run, "w-<one>", `card declined <img src=x onerror=alert(1)>`)
	st := clientlink.Store(e.c)
	if res, err := st.SignalRun(ctx, run, "sig-1", []byte(`{"note":"<script>alert(2)</script>"}`), 10); err != nil || !res.Delivered {
		t.Fatalf("signal = %+v, %v", res, err)
	}
	if _, err := st.SaveStepResult(ctx, run, "charge <b>", []byte(`{"id":"ch_<1>"}`)); err != nil {
		t.Fatal(err)
	}

	p = admin.get("/ui/runs/" + run)
	for _, want := range []string{
		`id="attempt-list"`, `data-attempt="1"`, `status-retry`,
		`card declined &lt;img src=x onerror=alert(1)&gt;`, `<code>w-&lt;one&gt;</code>`,
		`Signals (1)`, `<code>sig-1</code>`, `&lt;script&gt;alert(2)&lt;/script&gt;`,
		`Durable steps (1)`, `<code>charge &lt;b&gt;</code>`, `ch_&lt;1&gt;`,
		`attempt 1 began on worker w-&lt;one&gt;`, `attempt 1 failed, retry scheduled: card declined &lt;img`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	for _, raw := range []string{"<img src=x", "<script>alert(2)", "<b>"} {
		if strings.Contains(p.body, raw) {
			t.Errorf("the run page holds %q unescaped", raw)
		}
	}
	// A refresh (the live fragment) shows them too.
	if f := admin.get("/ui/runs/" + run + "?fragment=1"); !strings.Contains(f.body, `data-attempt="1"`) || !strings.Contains(f.body, `<code>sig-1</code>`) {
		t.Errorf("the refreshed run page lacks the attempts or signals:\n%s", f.body)
	}
}
