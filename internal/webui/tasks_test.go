package webui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

var limitedTask = task.Must[order, struct{}]("ui-limited", task.Options{
	Idempotency: task.TTL(`"lim:" + input.id`, 10*time.Minute),
	Retries:     4,
	Timeout:     45 * time.Second,
	Concurrency: []task.Concurrency{{Expression: "input.id", MaxRuns: 2}},
	RateLimits:  []task.RateLimit{{Name: "emails", Limit: 30, Period: time.Minute, Key: "input.id"}},
})

// The tasks page lists every registered task with its state; a task's
// page shows its definition (key, strategy, retries, timeout, concurrency,
// rate limits, schedules) and pauses and resumes it for an admin session,
// which the task's state everywhere follows. A read-only session sees no
// form and is refused the POST.
func TestTaskPagesPauseAndResume(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, rb *redistest.Backend) {
		ctx := context.Background()
		e := newEnv(t, rb, envOptions{})
		e.register(limitedTask.Definition())
		if _, err := e.c.Schedules().Create(ctx, task.Schedule{Name: "hourly-limited", Task: limitedTask.Name(), Cron: "@hourly"}); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(testToken)
		p := b.get("/ui/tasks")
		if p.status != http.StatusOK || strings.Count(p.body, `<tr class="task">`) != 2 || !strings.Contains(p.body, `href="/ui/tasks/ui-limited"`) {
			t.Fatalf("tasks page: %d\n%s", p.status, p.body)
		}
		p = b.get("/ui/tasks/ui-limited")
		for _, want := range []string{"&#34;lim:&#34; &#43; input.id", "ttl: the key is held for 10m", "4, backoff", "45s",
			"at most 2 at once per input.id", "emails: 30 units per 1m, 1 a run, per input.id", "hourly-limited", `id="pause-task"`, "active: workers start its runs"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("task page lacks %q", want)
			}
		}
		csrf := b.csrf("/ui/tasks/ui-limited")
		p = b.post("/ui/tasks/ui-limited/pause", url.Values{"csrf": {csrf}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/tasks/ui-limited?done=paused" {
			t.Fatalf("pause: %d %s", p.status, p.header.Get("Location"))
		}
		if m, err := e.c.Inspector().PausedTasks(ctx); err != nil || len(m) != 1 || m["ui-limited"].IsZero() {
			t.Fatalf("paused tasks after the form = %v, %v", m, err)
		}
		p = b.get("/ui/tasks/ui-limited?done=paused")
		for _, want := range []string{"The task was paused", `id="resume-task"`, "status-paused"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("paused task page lacks %q", want)
			}
		}
		if p := b.get("/ui/tasks"); strings.Count(p.body, "status-paused") != 1 {
			t.Errorf("tasks page shows %d paused, want 1", strings.Count(p.body, "status-paused"))
		}

		r := e.browser()
		r.signIn(testReadOnly)
		p = r.get("/ui/tasks/ui-limited")
		if p.status != http.StatusOK || strings.Contains(p.body, `method="post" action="/ui/tasks`) {
			t.Fatalf("read-only task page offers a form: %d\n%s", p.status, p.body)
		}
		rcsrf := r.csrf("/ui/tasks/ui-limited") // the sign-out form's
		if p := r.post("/ui/tasks/ui-limited/resume", url.Values{"csrf": {rcsrf}}); p.status != http.StatusForbidden {
			t.Fatalf("read-only resume: %d", p.status)
		}
		if p := b.post("/ui/tasks/ui-limited/resume", url.Values{"csrf": {"wrong"}}); p.status != http.StatusForbidden {
			t.Fatalf("resume with a wrong CSRF token: %d", p.status)
		}
		p = b.post("/ui/tasks/ui-limited/resume", url.Values{"csrf": {csrf}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/tasks/ui-limited?done=resumed" {
			t.Fatalf("resume: %d %s", p.status, p.header.Get("Location"))
		}
		if m, _ := e.c.Inspector().PausedTasks(ctx); len(m) != 0 {
			t.Fatalf("paused after resume: %v", m)
		}
		if p := b.get("/ui/tasks/no-such-task"); p.status != http.StatusNotFound {
			t.Fatalf("unknown task page: %d", p.status)
		}
		if p := b.post("/ui/tasks/no-such-task/pause", url.Values{"csrf": {csrf}}); p.status != http.StatusNotFound {
			t.Fatalf("pause of an unknown task: %d", p.status)
		}
	})
}

// The schedules page pauses, resumes and triggers a schedule now for an
// admin session; a read-only session sees no such form.
func TestSchedulesPageActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	s := e.c.Schedules()
	if _, err := s.Create(ctx, task.Schedule{Name: "nightly", Task: orderTask.Name(), Cron: "0 2 * * *", Input: []byte(`{"id":"n"}`)}); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(testToken)
	csrf := b.csrf("/ui/schedules")
	p := b.post("/ui/schedules/nightly/pause", url.Values{"csrf": {csrf}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/schedules?done=schedule-pause" {
		t.Fatalf("pause: %d %s", p.status, p.header.Get("Location"))
	}
	if info, err := s.Get(ctx, "nightly"); err != nil || !info.Paused {
		t.Fatalf("after pause: %+v, %v", info, err)
	}
	if p := b.get("/ui/schedules?done=schedule-pause"); !strings.Contains(p.body, "The schedule was paused") || !strings.Contains(p.body, "/ui/schedules/nightly/resume") {
		t.Fatalf("paused page:\n%s", p.body)
	}
	if p := b.post("/ui/schedules/nightly/resume", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("resume: %d", p.status)
	}
	if info, _ := s.Get(ctx, "nightly"); info.Paused {
		t.Fatal("still paused after resume")
	}
	p = b.post("/ui/schedules/nightly/trigger", url.Values{"csrf": {csrf}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") || !strings.HasSuffix(loc, "?done=schedule-triggered") {
		t.Fatalf("trigger: %d %s", p.status, loc)
	}
	id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(loc, "/ui/runs/"), "?done=schedule-triggered"))
	if run, err := e.c.Inspector().GetRun(ctx, id); err != nil || run.Task != orderTask.Name() {
		t.Fatalf("triggered run = %+v, %v", run, err)
	}
	if p := b.post("/ui/schedules/nosuch/pause", url.Values{"csrf": {csrf}}); p.status != http.StatusNotFound {
		t.Fatalf("pause of an unknown schedule: %d", p.status)
	}
	if p := b.post("/ui/schedules/nightly/explode", url.Values{"csrf": {csrf}}); p.status != http.StatusNotFound {
		t.Fatalf("unknown action: %d", p.status)
	}
	r := e.browser()
	r.signIn(testReadOnly)
	if p := r.get("/ui/schedules"); strings.Contains(p.body, "/ui/schedules/nightly/") {
		t.Fatalf("read-only schedules page offers a form:\n%s", p.body)
	}
	if p := r.post("/ui/schedules/nightly/pause", url.Values{"csrf": {r.csrf("/ui/schedules")}}); p.status != http.StatusForbidden {
		t.Fatalf("read-only pause: %d", p.status)
	}
}
