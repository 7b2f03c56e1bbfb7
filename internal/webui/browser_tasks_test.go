package webui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// consoleTask is the task the console test pauses: a worker runs it.
var consoleTask = task.Must[order, struct{}]("ui-console", task.Options{
	Idempotency: task.TTL(`"console:" + input.id`, 10*time.Minute),
	Retries:     3,
	Timeout:     30 * time.Second,
	Concurrency: []task.Concurrency{{Expression: "input.id", MaxRuns: 4}},
	RateLimits:  []task.RateLimit{{Name: "console-api", Limit: 100, Period: time.Minute}},
})

// openBrowser starts a headless Chromium for the test and returns a
// function opening a tab with cookies of its own.
func openBrowser(t *testing.T) func() (*tab, context.CancelFunc) {
	t.Helper()
	exe := chromium(t)
	dir := screenshots(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	t.Cleanup(cancelAlloc)
	browserCtx, closeBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(closeBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return func() (*tab, context.CancelFunc) {
		tctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
		if err := chromedp.Do(tctx); err != nil {
			t.Fatalf("open a tab: %v", err)
		}
		return &tab{t: t, ctx: tctx, dir: dir}, cancel
	}
}

// contentFits reports whether nothing in the page's main part reaches past
// the window's right edge, a table inside its own scrolling box aside.
const contentFits = `[...document.querySelectorAll('main *')].every(el => el.closest('.table-wrap') !== null && !el.classList.contains('table-wrap') ||
	el.getBoundingClientRect().right <= document.documentElement.clientWidth + 1)`

// shotWidths takes screenshots of the page at 1280 and 390 px wide, named
// name-1280 and name-390, checking at each that the content fits.
func (b *tab) shotWidths(name string) {
	b.t.Helper()
	for _, w := range []int64{1280, 390} {
		b.do("set the width to "+fmt.Sprint(w), chromedp.EmulateViewport(w, 860))
		b.waitJS(fmt.Sprintf("%s at %d px: the content fits the window", name, w), contentFits)
		b.shot(fmt.Sprintf("%s-%d", name, w))
	}
	b.do("set the width back", chromedp.EmulateViewport(1280, 860))
}

// workerSeesPaused reads the worker's taskq_worker_task_paused of the
// console task (-1 when absent).
func workerSeesPaused(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "taskq_worker_task_paused" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" && l.GetValue() == consoleTask.Name() {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestTaskConsoleInABrowser drives the task console in a headless
// Chromium with a worker running: the tasks page and a task's page with
// its definition; pausing the task there (a run triggered meanwhile stays
// queued while another task's run ends), resuming it (the run then ends);
// pausing, resuming and triggering a schedule now from the schedules page;
// a bulk cancel of ticked runs and a bulk retry of every run matching a
// search, each through its confirmation page;
// and a read-only session that finds no form that posts on these pages.
// Screenshots at 1280 and 390 px.
func TestTaskConsoleInABrowser(t *testing.T) {
	b := redistest.Real(t)
	e := newEnv(t, b, envOptions{ui: Options{Token: testToken, ReadOnlyToken: testReadOnly, PollInterval: 500 * time.Millisecond}})
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "ui-console-worker", Logger: quiet,
		FetchBlock: 50 * time.Millisecond, ShutdownTimeout: time.Second, PauseRefresh: 50 * time.Millisecond, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, consoleTask, func(worker.Context, order) (struct{}, error) { return struct{}{}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, webhookTask, func(_ worker.Context, in map[string]any) (map[string]any, error) { return in, nil }); err != nil {
		t.Fatal(err)
	}
	runWorker(ctx, t, w)
	if _, err := e.c.Schedules().Create(ctx, task.Schedule{Name: "console-nightly", Task: consoleTask.Name(), Cron: "0 2 * * *",
		Input: []byte(`{"id":"nightly"}`)}); err != nil {
		t.Fatal(err)
	}
	newTab := openBrowser(t)
	admin, closeAdmin := newTab()
	defer closeAdmin()
	admin.signIn(e.url, testToken, "console-admin")

	admin.do("open the tasks from the menu", chromedp.Click(chromedp.CSS(`nav a[href="/ui/tasks"]`)), chromedp.WaitVisible(chromedp.ID("tasks")))
	admin.waitJS("the tasks listed", `[...document.querySelectorAll('#tasks tr.task')].map(tr => tr.children[0].textContent).join(',') === 'ui-console,ui-order,ui-webhook'`)
	admin.shotWidths("tasks")
	admin.do("open the task", chromedp.Evaluate[chromedp.Void](`document.querySelector('#tasks a[href="/ui/tasks/ui-console"]').click()`), chromedp.WaitVisible(chromedp.ID("task-definition")))
	admin.waitJS("the definition shown", `(() => { const d = document.querySelector('#task-definition').textContent;
		return d.includes('"console:" + input.id') && d.includes('ttl') && d.includes('3, backoff') && d.includes('30s') &&
			d.includes('at most 4 at once per input.id') && d.includes('console-api: 100 units per 1m') })()`)
	admin.waitJS("the schedule shown", `document.querySelector('#task-schedules').textContent.includes('console-nightly')`)
	admin.shotWidths("task")

	// Pause: a run triggered now stays queued while another task's run
	// ends; resumed, it ends too.
	admin.do("pause the task", chromedp.Evaluate[chromedp.Void](`document.querySelector('#pause-task').click()`), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the task shown paused", `document.querySelector('#task-state').textContent.includes('paused') && document.querySelector('#resume-task') !== null`)
	admin.shotWidths("task-paused")
	eventuallyPaused := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			m, err := e.c.Inspector().PausedTasks(ctx)
			if err == nil && (m[consoleTask.Name()] != time.Time{}) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("paused tasks = %v, %v; want ui-console paused %v", m, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	eventuallyPaused(true)
	held, err := client.RunNoWait(ctx, e.c, consoleTask, order{ID: "while-paused"})
	if err != nil {
		t.Fatalf("a trigger while paused: %v", err)
	}
	// The worker has read the pause (its gauge says so) before judging.
	deadline := time.Now().Add(10 * time.Second)
	for workerSeesPaused(t, reg) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not read the pause")
		}
		time.Sleep(20 * time.Millisecond)
	}
	other, err := client.RunNoWait(ctx, e.c, webhookTask, map[string]any{"id": "other"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if info, err := other.Wait(wctx); err != nil || info.Status != client.StatusSucceeded {
		t.Fatalf("the other task's run: %+v, %v", info, err)
	}
	if r, err := e.c.Inspector().GetRun(ctx, held.ID()); err != nil || r.Status != client.StatusQueued || r.Attempt != 0 {
		t.Fatalf("the paused task's run: %+v, %v; want queued, not started", r, err)
	}
	admin.do("resume the task", chromedp.Evaluate[chromedp.Void](`document.querySelector('#resume-task').click()`), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the task shown active", `document.querySelector('#task-state').textContent.includes('active') && document.querySelector('#pause-task') !== null`)
	if info, err := held.Wait(wctx); err != nil || info.Status != client.StatusSucceeded {
		t.Fatalf("the paused task's run after resume: %+v, %v", info, err)
	}

	// The schedules page: pause, resume, trigger now.
	admin.do("open the schedules", chromedp.Navigate(e.url+"/ui/schedules"), chromedp.WaitVisible(chromedp.ID("schedules")))
	admin.do("pause the schedule", chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="/ui/schedules/console-nightly/pause"] button').click()`), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the schedule shown paused", `document.querySelector('#schedules tr.schedule').textContent.includes('paused') && document.querySelector('form[action="/ui/schedules/console-nightly/resume"]') !== null`)
	admin.shotWidths("schedules-paused")
	if info, err := e.c.Schedules().Get(ctx, "console-nightly"); err != nil || !info.Paused {
		t.Fatalf("after the pause: %+v, %v", info, err)
	}
	admin.do("resume the schedule", chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="/ui/schedules/console-nightly/resume"] button').click()`), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the schedule shown active", `document.querySelector('form[action="/ui/schedules/console-nightly/pause"]') !== null`)
	admin.do("trigger the schedule now", chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="/ui/schedules/console-nightly/trigger"] button').click()`), chromedp.WaitVisible(chromedp.ID("run-status")))
	admin.waitJS("the schedule's run, which the worker runs", `document.querySelector('#run-status').textContent.trim() === 'succeeded'`)
	admin.shot("schedule-triggered")

	// Bulk: tick two queued runs and cancel them; then retry every
	// cancelled run of the task.
	var picked []string
	for i := range 3 {
		picked = append(picked, e.trigger(ctx, order{ID: fmt.Sprint("bulk-browser-", i)}))
	}
	admin.do("open the task's runs", chromedp.Navigate(e.url+"/ui/runs?task=ui-order"), chromedp.WaitVisible(chromedp.ID("bulk-form")))
	admin.waitJS("the runs listed", fmt.Sprintf(`document.querySelector('#runs input[value=%s]') !== null`, jsString(picked[2])))
	admin.do("tick two runs", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`document.querySelector('#runs input[value=%s]').click(); document.querySelector('#runs input[value=%s]').click()`, jsString(picked[0]), jsString(picked[1]))))
	admin.shotWidths("runs-selected")
	if n := eval[int](admin, "the ticks kept across refreshes", `new Promise(ok => setTimeout(() => ok(document.querySelectorAll('#runs input:checked').length), 1200))`); n != 2 {
		t.Fatalf("%d runs ticked after the page's refresh interval, want 2", n)
	}
	admin.do("cancel the selected", chromedp.Evaluate[chromedp.Void](`document.querySelector('#bulk-cancel-selected').click()`), chromedp.WaitVisible(chromedp.ID("bulk-count")))
	if got := eval[string](admin, "read the count", `document.querySelector('#bulk-count').textContent`); !strings.Contains(got, "Dry run: 2 runs would be cancelled") {
		t.Errorf("the confirmation says %q", got)
	}
	admin.shotWidths("bulk-confirm")
	if r, _ := e.c.Inspector().GetRun(ctx, picked[0]); r == nil || r.Status != client.StatusQueued {
		t.Fatalf("the confirmation changed a run: %+v", r)
	}
	admin.do("confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("bulk-result")))
	if got := eval[string](admin, "read the result", `document.querySelector('#bulk-result').textContent`); got != "2 of 2 runs cancelled." {
		t.Errorf("the result says %q", got)
	}
	admin.shotWidths("bulk-done")
	for i, id := range picked {
		want := client.StatusCancelled
		if i == 2 {
			want = client.StatusQueued
		}
		if r, _ := e.c.Inspector().GetRun(ctx, id); r == nil || r.Status != want {
			t.Errorf("run %d after the bulk cancel: %+v, want %s", i, r, want)
		}
	}
	admin.do("open the cancelled runs", chromedp.Navigate(e.url+"/ui/runs?task=ui-order&status=cancelled"), chromedp.WaitVisible(chromedp.ID("bulk-retry-all")))
	admin.do("retry every run matching", chromedp.Click(chromedp.ID("bulk-retry-all")), chromedp.WaitVisible(chromedp.ID("bulk-count")))
	if got := eval[string](admin, "read the count", `document.querySelector('#bulk-count').textContent`); !strings.Contains(got, "Dry run: 2 runs would be retried") {
		t.Errorf("the filter's confirmation says %q", got)
	}
	admin.do("confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("bulk-result")))
	if got := eval[string](admin, "read the result", `document.querySelector('#bulk-result').textContent`); got != "2 of 2 runs retried." {
		t.Errorf("the filter's result says %q", got)
	}

	// Paging: older, then newer, each page saying which runs it shows.
	for i := range pageSize {
		e.trigger(ctx, order{ID: fmt.Sprint("page-browser-", i)})
	}
	admin.do("open the task's runs", chromedp.Navigate(e.url+"/ui/runs?task=ui-order"), chromedp.WaitVisible(chromedp.ID("pager")))
	admin.waitJS("the first page", `document.querySelector('#page-count').textContent === '1–50' && document.querySelector('#newer') === null`)
	admin.do("go to older runs", chromedp.Evaluate[chromedp.Void](`document.querySelector('#next').click()`), chromedp.WaitVisible(chromedp.ID("newer")))
	admin.waitJS("the second page", `/^51–\d+( of \d+)?$/.test(document.querySelector('#page-count').textContent)`)
	admin.shotWidths("runs-page-2")
	admin.do("go back to newer runs", chromedp.Evaluate[chromedp.Void](`document.querySelector('#newer').click()`), chromedp.WaitVisible(chromedp.ID("pager")))
	admin.waitJS("the first page again", `document.querySelector('#page-count').textContent === '1–50' && document.querySelector('#newer') === null`)

	// Rate limits: the use of the console task's limit.
	admin.do("open the rate limits", chromedp.Navigate(e.url+"/ui/ratelimits"), chromedp.WaitVisible(chromedp.ID("ratelimits")))
	admin.waitJS("the limit listed", `document.querySelector('#ratelimits tr.ratelimit').textContent.includes('console-api')`)
	admin.waitJS("its use: the runs of the console task took units", `/[1-9][0-9]* of 100/.test(document.querySelector('#ratelimits td.used').textContent)`)
	admin.shotWidths("ratelimits")

	// A read-only session: no form that posts on these pages, but sign-out.
	reader, closeReader := newTab()
	defer closeReader()
	reader.signIn(e.url, testReadOnly, "console-reader")
	for _, path := range []string{"/ui/tasks", "/ui/tasks/ui-console", "/ui/schedules", "/ui/runs", "/ui/runs/bulk?action=cancel&all=1", "/ui/ratelimits"} {
		reader.do("open "+path, chromedp.Navigate(e.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		if n := eval[int](reader, "count forms that post", `document.querySelectorAll('form[method=post]:not(.logout)').length`); n != 0 {
			t.Errorf("the read-only session is offered %d forms on %s", n, path)
		}
	}
	reader.shotWidths("task-reader")
}
