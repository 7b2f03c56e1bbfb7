package webui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// The schedules page lists every schedule with its state, misfire policy
// and key expression (escaped), or says there is none.
func TestSchedulesPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	b := e.browser()
	b.signIn(testToken)
	if p := b.get("/ui/schedules"); p.status != http.StatusOK || !strings.Contains(p.body, "No schedules in this namespace.") {
		t.Fatalf("the empty page: %d\n%s", p.status, p.body)
	}
	s := e.c.Schedules()
	if _, err := s.Create(ctx, task.Schedule{Name: "nightly", Task: orderTask.Name(), Cron: "0 2 * * *", TimeZone: "Europe/Paris",
		KeyExpression: `"<b>" + schedule.name + string(schedule.time)`}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, task.Schedule{Name: "beat", Task: orderTask.Name(), Cron: "@every 30s", Paused: true,
		Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 3}}); err != nil {
		t.Fatal(err)
	}
	p := b.get("/ui/schedules")
	if p.status != http.StatusOK || strings.Count(p.body, `<tr class="schedule">`) != 2 {
		t.Fatalf("the page: %d with %d rows, want 2", p.status, strings.Count(p.body, `<tr class="schedule">`))
	}
	for _, want := range []string{"Europe/Paris", "catch up 3 within 24h0m0s", "status-paused", "&#34;&lt;b&gt;&#34; &#43; schedule.name", `href="/ui/schedules" aria-current="page"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(p.body, `"<b>"`) {
		t.Error("the key expression is not escaped")
	}
}
