package webui

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// The rate limits page lists every limit the registered tasks declare;
// a keyed limit shows its use for the key named (escaped), and asks for
// one otherwise.
func TestRateLimitsPageShowsUsePerKey(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, rb *redistest.Backend) {
		ctx := context.Background()
		e := newEnv(t, rb, envOptions{})
		e.register(limitedTask.Definition())
		key := "<b>acme</b>"
		res, errs := clientlink.Store(e.c).TakeRateLimits(ctx, time.Now(), []engine.RateTake{
			{Name: "emails", Key: key, Limit: 30, Period: time.Minute, Units: 1, Token: "t1"},
			{Name: "emails", Key: key, Limit: 30, Period: time.Minute, Units: 1, Token: "t2"},
		})
		for i := range errs {
			if errs[i] != nil || !res[i].Taken {
				t.Fatalf("take %d = %+v, %v", i, res[i], errs[i])
			}
		}
		b := e.browser()
		b.signIn(testToken)
		p := b.get("/ui/ratelimits")
		if p.status != http.StatusOK || strings.Count(p.body, `<tr class="ratelimit">`) != 1 || !strings.Contains(p.body, "30 per 1m") ||
			!strings.Contains(p.body, "name a key above") || !strings.Contains(p.body, `href="/ui/tasks/ui-limited"`) {
			t.Fatalf("without a key: %d\n%s", p.status, p.body)
		}
		p = b.get("/ui/ratelimits?key=" + "%3Cb%3Eacme%3C%2Fb%3E")
		if !strings.Contains(p.body, `2 of 30 for key <code class="key-text">&lt;b&gt;acme&lt;/b&gt;</code>`) {
			t.Fatalf("with the key:\n%s", p.body)
		}
		if p := b.get("/ui/ratelimits?key=other"); !strings.Contains(p.body, "0 of 30 for key") {
			t.Fatalf("another key:\n%s", p.body)
		}
	})
}
