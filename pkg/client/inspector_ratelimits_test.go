package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// The Inspector lists the rate limits the registered tasks declare, once
// per name with every task that names it, and the units taken in the last
// period: of a limit without a key always, of a keyed one for the key
// asked for.
func TestListRateLimitsShowsTheirUse(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		smtp := task.RateLimit{Name: "smtp", Limit: 50, Period: time.Second}
		tenant := task.RateLimit{Name: "per-tenant", Limit: 10, Period: time.Hour, Key: "input.tenant"}
		for _, d := range []*task.Definition{
			task.Must[json.RawMessage, json.RawMessage]("welcome", task.Options{RateLimits: []task.RateLimit{smtp, tenant}}).Definition(),
			task.Must[json.RawMessage, json.RawMessage]("digest", task.Options{RateLimits: []task.RateLimit{smtp}}).Definition(),
		} {
			registerDef(t, c, d)
		}
		take := []engine.RateTake{
			{Name: "smtp", Limit: 50, Period: time.Second, Units: 1, Token: "r1"},
			{Name: "smtp", Limit: 50, Period: time.Second, Units: 1, Token: "r2"},
			{Name: "per-tenant", Key: "acme", Limit: 10, Period: time.Hour, Units: 1, Token: "r1"},
		}
		if _, errs := clientlink.Store(c).TakeRateLimits(t.Context(), time.Time{}, take); errs[0] != nil || errs[1] != nil || errs[2] != nil {
			t.Fatal(errs)
		}
		ls, err := c.Inspector().ListRateLimits(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != 2 || ls[0].Name != "per-tenant" || ls[0].Used != nil || ls[0].KeyExpression != "input.tenant" ||
			ls[1].Name != "smtp" || ls[1].Used == nil || *ls[1].Used != 2 || ls[1].Limit != 50 || ls[1].PeriodMs != 1000 ||
			len(ls[1].Tasks) != 2 || ls[1].Tasks[0] != "digest" || ls[1].Tasks[1] != "welcome" {
			t.Fatalf("limits = %+v", ls)
		}
		ls, err = c.Inspector().ListRateLimits(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if ls[0].Key != "acme" || ls[0].Used == nil || *ls[0].Used != 1 || *ls[1].Used != 2 {
			t.Fatalf("limits for key acme = %+v", ls)
		}
	})
}
