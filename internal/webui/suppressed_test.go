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

func TestSuppressedTriggersAreListedAndSearched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	owner := e.trigger(ctx, order{ID: "sup-1"})
	other := e.trigger(ctx, order{ID: "sup-2"})
	hostile := e.trigger(ctx, order{ID: hostileKeyID})
	for _, in := range []order{{ID: "sup-1", Amount: 1}, {ID: "sup-1", Amount: 2}, {ID: "sup-2"}, {ID: hostileKeyID}} {
		if _, err := client.RunNoWait(ctx, e.c, orderTask, in); !errors.Is(err, client.ErrIdempotencyCollision) {
			t.Fatalf("duplicate %+v: %v, want a collision", in, err)
		}
	}
	b := e.browser()
	b.signIn(testToken)
	p := b.get("/ui/suppressed")
	if p.status != http.StatusOK || strings.Count(p.body, `<tr class="suppressed">`) != 4 {
		t.Fatalf("the suppressed page: %d with %d rows, want 4", p.status, strings.Count(p.body, `<tr class="suppressed">`))
	}
	if strings.Contains(p.body, hostileKeyID) || !strings.Contains(p.body, "order:&lt;script&gt;window.pwned=1&lt;/script&gt;") {
		t.Error("the hostile key is not escaped on the suppressed page")
	}
	if !strings.Contains(p.body, `href="/ui/runs/`+hostile+`"`) {
		t.Error("a row does not link to its owner run")
	}
	for q, want := range map[string]int{"key=order%3Asup-1": 2, "owner=" + other: 1, "key=order%3Anone": 0} {
		p := b.get("/ui/suppressed?" + q)
		if n := strings.Count(p.body, `<tr class="suppressed">`); p.status != http.StatusOK || n != want {
			t.Errorf("suppressed ?%s: %d with %d rows, want %d", q, p.status, n, want)
		}
	}
	if p := b.get("/ui/suppressed?key=order%3Asup-1"); strings.Contains(p.body, other) || !strings.Contains(p.body, owner) {
		t.Error("the search by key lists another key's owner")
	}
	// The owner's page counts them, with a link to the list.
	rp := b.get("/ui/runs/" + owner)
	if !strings.Contains(rp.body, `<a href="/ui/suppressed?owner=`+owner+`">2 suppressed triggers</a>`) {
		t.Errorf("the owner's page does not count its 2 suppressed triggers:\n%s", rp.body)
	}
	// A key no run holds now but that suppressed triggers had: the search
	// lists its runs and points to the suppressed triggers.
	if _, err := e.c.Handle(owner).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	sp := b.get("/ui/runs?q=" + url.QueryEscape("order:sup-1"))
	if sp.status != http.StatusOK || !strings.Contains(sp.body, `id="search-suppressed"`) || !strings.Contains(sp.body, `href="/ui/suppressed?key=order%3Asup-1">2 suppressed triggers</a>`) || !strings.Contains(sp.body, owner) {
		t.Errorf("search for a released key with suppressed triggers: %d\n%s", sp.status, sp.body)
	}
}
