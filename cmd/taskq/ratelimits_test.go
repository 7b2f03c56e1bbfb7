package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// ratelimits ls lists the registered tasks' limits with their use, as a
// table and as the JSON GET /api/v1/ratelimits answers; a trigger whose
// rate limit key fails is refused with the limit named.
func TestRateLimitsLs(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cli := newCLI(t, b)
		if r := cli.run("ratelimits", "ls"); r.code != 0 || !strings.Contains(r.stdout, "No rate limits") {
			t.Fatalf("no limits: %+v", r)
		}
		d := task.Must[json.RawMessage, json.RawMessage]("mail", task.Options{RateLimits: []task.RateLimit{
			{Name: "smtp", Limit: 50, Period: time.Second},
			{Name: "per-tenant", Limit: 5, Period: time.Minute, Key: "input.tenant"},
		}}).Definition()
		spec := taskdef.Spec(d)
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
		if _, err := clientlink.Store(c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
			t.Fatal(err)
		}
		if _, errs := redisstore.StoreOf(clientlink.Store(c)).TakeRateLimits(context.Background(), time.Time{}, []engine.RateTake{
			{Name: "per-tenant", Key: "acme", Limit: 5, Period: time.Minute, Units: 1, Token: "r"},
		}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		r := cli.run("ratelimits", "ls", "--key", "acme")
		if r.code != 0 || !strings.Contains(r.stdout, "per-tenant") || !strings.Contains(r.stdout, "input.tenant") ||
			!strings.Contains(r.stdout, "1m0s") || !strings.Contains(r.stdout, "smtp") {
			t.Fatalf("ratelimits ls --key acme: %+v", r)
		}
		r = cli.run("ratelimits", "ls", "--key", "acme", "-o", "json")
		var got rateLimitList
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || len(got.RateLimits) != 2 {
			t.Fatalf("ratelimits ls -o json: %+v, %v", r, err)
		}
		if l := got.RateLimits[0]; l.Name != "per-tenant" || l.Key != "acme" || l.Used == nil || *l.Used != 1 {
			t.Fatalf("per-tenant: %+v", l)
		}
		r = cli.run("runs", "trigger", "mail", "--input", `{"id":"1"}`)
		if r.code == 0 || !strings.Contains(r.stderr, `rate limit "per-tenant" key`) {
			t.Fatalf("a trigger without a tenant: %+v; want it refused naming the limit", r)
		}
	})
}
