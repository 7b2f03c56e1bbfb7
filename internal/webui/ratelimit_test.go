package webui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// The run page of a queued run a rate limit holds back says which, escaped.
func TestTheRunPageSaysWhichRateLimitARunWaitsFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "held-1", Amount: 1})
	st, ds := readOnly(ctx, t, e)
	res, errs := st.DeferRuns(ctx, []engine.Deferral{{Delivery: ds[0], Due: time.Now().Add(time.Hour), Reason: `rate limit "emails" key "<b>acme</b>"`}})
	if errs[0] != nil || !res[0].Held {
		t.Fatalf("hold back = %+v, %v", res, errs)
	}
	admin := e.browser()
	admin.signIn(testToken)
	p := admin.get("/ui/runs/" + run)
	if !strings.Contains(p.body, `id="run-waiting">rate limit &#34;emails&#34; key &#34;&lt;b&gt;acme&lt;/b&gt;&#34;</dd>`) {
		t.Fatalf("the run page does not say what the run waits for:\n%s", p.body)
	}
	// A deferral is not a scheduled time: the page says it once, as a rate
	// limit, and the listing of scheduled runs leaves the run out.
	if n := strings.Count(p.body, `id="run-waiting"`); n != 1 {
		t.Errorf("the run page says what the run waits for %d times, want once:\n%s", n, p.body)
	}
	if strings.Contains(p.body, `id="run-scheduled"`) || strings.Contains(p.body, "scheduled time") {
		t.Errorf("the run page describes a rate-limit deferral as a scheduled run:\n%s", p.body)
	}
	if !strings.Contains(p.body, `id="run-deferred"`) || !strings.Contains(p.body, "tried again: held back by rate limit") {
		t.Errorf("the run page does not say when the deferred run is tried again:\n%s", p.body)
	}
	page, err := e.c.Inspector().ListRuns(ctx, client.ListOptions{Scheduled: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Errorf("the scheduled runs list %d runs, want none: a rate limit deferred the only run", len(page.Items))
	}
}

// The run page of a run whose handler waits durably says so: status
// waiting, what it waits for, and when it wakes.
func TestTheRunPageSaysWhatAWaitingRunWaitsFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "nap-1", Amount: 1})
	st, ds := readOnly(ctx, t, e)
	now := time.Now()
	sts, errs := st.StartBatch(ctx, "w", now, ds)
	if errs[0] != nil || !sts[0].Started {
		t.Fatalf("start = %+v, %v", sts, errs)
	}
	res, errs := st.FinishBatch(ctx, []*engine.FinishParams{{RunID: run, Attempt: sts[0].Attempt, Outcome: engine.OutcomeWait,
		Payload: []byte("sleep until tomorrow"), RetryAt: now.Add(24 * time.Hour), Now: now}})
	if errs[0] != nil || !res[0].Written {
		t.Fatalf("wait = %+v, %v", res, errs)
	}
	admin := e.browser()
	admin.signIn(testToken)
	p := admin.get("/ui/runs/" + run)
	for _, want := range []string{`status-waiting`, `<dt>Waits for</dt><dd id="run-waiting">sleep until tomorrow</dd>`,
		`<dt>Wakes</dt>`, "wakes: the handler&#39;s durable wait"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the run page of a waiting run lacks %q:\n%s", want, p.body)
		}
	}
}

// readOnly reads the only queued run of the order task for worker "w",
// as a worker would, and returns the store it read it from.
func readOnly(ctx context.Context, t *testing.T, e *env) (engine.Engine, []engine.Delivery) {
	t.Helper()
	st := clientlink.Store(e.c)
	if err := st.EnsureGroup(ctx, orderTask.Name()); err != nil {
		t.Fatal(err)
	}
	ds, err := st.ReadGroup(ctx, 0, "w", []string{orderTask.Name()}, 10, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("read = %v, %v", ds, err)
	}
	return st, ds
}
