package webui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

func TestRetryCreatesALinkedRunAfterAConfirmation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	in := e.c.Inspector()
	run := e.trigger(ctx, order{ID: "retry-1", Amount: 7}, client.WithMetadata(map[string]any{"tenant": "acme"}))
	admin := e.browser()
	admin.signIn(testToken)

	// A queued run offers no retry, and a retry of it is refused.
	if p := admin.get("/ui/runs/" + run); strings.Contains(p.body, `id="retry"`) {
		t.Error("a queued run is offered a retry")
	}
	token := admin.csrf("/ui/runs/" + run + "/cancel")
	p := admin.post("/ui/runs/"+run+"/retry", url.Values{"csrf": {token}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "only a failed or cancelled run can be retried") {
		t.Errorf("retry of a queued run: %d, want 409 saying why", p.status)
	}
	if _, err := e.c.Handle(run).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if p := admin.get("/ui/runs/" + run); !strings.Contains(p.body, `id="retry" href="/ui/runs/`+run+`/retry"`) {
		t.Fatal("a cancelled run is not offered a retry")
	}
	p = admin.get("/ui/runs/" + run + "/retry")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Retry the run") {
		t.Fatalf("the confirmation page: %d", p.status)
	}
	if r, _ := in.GetRun(ctx, run); r.RetriedBy != "" {
		t.Fatal("the confirmation page retried the run")
	}
	p = admin.post("/ui/runs/"+run+"/retry", url.Values{"csrf": {token}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasSuffix(loc, "?done=retried") || strings.HasPrefix(loc, "/ui/runs/"+run+"?") {
		t.Fatalf("retry: %d to %q, want 303 to the new run", p.status, loc)
	}
	orig, err := in.GetRun(ctx, run)
	if err != nil || orig.RetriedBy == "" || loc != "/ui/runs/"+url.PathEscape(orig.RetriedBy)+"?done=retried" {
		t.Fatalf("the original after the retry: %+v, %v; the page went to %q", orig, err, loc)
	}
	retry := orig.RetriedBy
	if r, err := in.GetRun(ctx, retry); err != nil || r.RetryOf != run || string(r.Input) != `{"id":"retry-1","amount":7}` || string(r.Metadata) != `{"tenant":"acme"}` {
		t.Fatalf("the new run: %+v, %v", r, err)
	}
	np := admin.get(loc)
	if !strings.Contains(np.body, `id="retry-of"><a href="/ui/runs/`+run+`"`) || !strings.Contains(np.body, "The run was retried") {
		t.Error("the new run's page does not link to the run it retries, or does not say it was retried")
	}
	if op := admin.get("/ui/runs/" + run); !strings.Contains(op.body, `id="retried-by"><a href="/ui/runs/`+retry+`"`) || strings.Contains(op.body, `id="retry"`) {
		t.Error("the original's page does not link to its retry, or still offers a retry")
	}
	// A second retry of the original names the retry.
	p = admin.post("/ui/runs/"+run+"/retry", url.Values{"csrf": {token}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "already retried by run "+retry) || !strings.Contains(p.body, `href="/ui/runs/`+retry+`" id="error-link"`) {
		t.Errorf("a second retry: %d, want 409 linking to %s:\n%s", p.status, retry, p.body)
	}
}

func TestRetryUnderAHeldKeyNamesTheOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	in := e.c.Inspector()
	first := e.trigger(ctx, order{ID: "retry-held"})
	if _, err := e.c.Handle(first).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	second := e.trigger(ctx, order{ID: "retry-held"}) // takes the released key
	admin := e.browser()
	admin.signIn(testToken)
	if p := admin.get("/ui/runs/" + first + "/retry"); !strings.Contains(p.body, `id="retry-held"`) || !strings.Contains(p.body, second) {
		t.Error("the confirmation page does not warn that another run holds the key")
	}
	p := admin.post("/ui/runs/"+first+"/retry", url.Values{"csrf": {admin.csrf("/ui/runs/" + first + "/retry")}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "is held by run "+second) || !strings.Contains(p.body, `href="/ui/runs/`+second+`" id="error-link"`) {
		t.Fatalf("retry under a held key: %d, want 409 naming and linking %s:\n%s", p.status, second, p.body)
	}
	if r, _ := in.GetRun(ctx, first); r.RetriedBy != "" {
		t.Error("a refused retry linked the original")
	}
}

func TestAReadOnlySessionCannotRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "retry-ro"})
	if _, err := e.c.Handle(run).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	reader := e.browser()
	reader.signIn(testReadOnly)
	if p := reader.get("/ui/runs/" + run); p.status != http.StatusOK || strings.Contains(p.body, "Retry this run") {
		t.Errorf("a read-only session is offered a retry (%d)", p.status)
	}
	if p := reader.post("/ui/runs/"+run+"/retry", url.Values{"csrf": {reader.csrf("/ui/")}}); p.status != http.StatusForbidden {
		t.Errorf("a retry from a read-only session with its own CSRF token: %d, want 403", p.status)
	}
	admin := e.browser()
	admin.signIn(testToken)
	if p := admin.post("/ui/runs/"+run+"/retry", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("a retry without the CSRF token: %d, want 403", p.status)
	}
	if r, err := e.c.Inspector().GetRun(ctx, run); err != nil || r.RetriedBy != "" {
		t.Errorf("after refused retries the run is %+v (%v), want not retried", r, err)
	}
	var nh *client.StateError
	if _, err := e.c.Inspector().GetKey(ctx, "order:retry-ro"); !(errors.As(err, &nh) && nh.Kind == client.ErrKeyNotHeld) {
		t.Errorf("after refused retries the key: %v, want free", err)
	}
}
