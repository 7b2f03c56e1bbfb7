package webui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// The run page of a queued run a rate limit holds back says which, escaped.
func TestTheRunPageSaysWhichRateLimitARunWaitsFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "held-1", Amount: 1})
	st := clientlink.Store(e.c)
	if err := st.EnsureGroup(ctx, orderTask.Name()); err != nil {
		t.Fatal(err)
	}
	ds, err := st.ReadGroup(ctx, 0, "w", []string{orderTask.Name()}, 10, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("read = %v, %v", ds, err)
	}
	res, errs := st.DeferRuns(ctx, []redisstore.Deferral{{Delivery: ds[0], Due: time.Now().Add(time.Hour), Reason: `rate limit "emails" key "<b>acme</b>"`}})
	if errs[0] != nil || !res[0].Held {
		t.Fatalf("hold back = %+v, %v", res, errs)
	}
	admin := e.browser()
	admin.signIn(testToken)
	p := admin.get("/ui/runs/" + run)
	if !strings.Contains(p.body, `id="run-waiting">rate limit &#34;emails&#34; key &#34;&lt;b&gt;acme&lt;/b&gt;&#34;</dd>`) {
		t.Fatalf("the run page does not say what the run waits for:\n%s", p.body)
	}
}
