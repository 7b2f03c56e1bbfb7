package webui

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// The overview and a task's page draw the run statistics as SVG charts in
// Chromium, within the CSP (no script, nothing fetched): an hour's and a
// day's four charts each, titled for screen readers, the throughput line
// off its baseline after runs ended, and the queue counts beside them.
func TestChartsInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	b := redistest.Real(t)
	e := newEnv(t, b, envOptions{ui: Options{Token: testToken, ReadOnlyToken: testReadOnly, PollInterval: time.Second}})
	ctx := context.Background()
	w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "charts-worker", Logger: quiet,
		FetchBlock: 50 * time.Millisecond, ShutdownTimeout: time.Second, StatsInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, webhookTask, func(ctx worker.Context, in map[string]any) (map[string]any, error) {
		time.Sleep(20 * time.Millisecond)
		return in, nil
	}); err != nil {
		t.Fatal(err)
	}
	runWorker(ctx, t, w)
	// Six runs, each triggered twice: six duplicates.
	for i := range 12 {
		_, err := client.RunNoWait(ctx, e.c, webhookTask, map[string]any{"id": fmt.Sprintf("c-%d", i%6)})
		var coll *client.IdempotencyCollisionError
		if (i < 6 && err != nil) || (i >= 6 && !errors.As(err, &coll)) {
			t.Fatalf("trigger %d: %v", i, err)
		}
	}
	// The worker and the client write their counts every StatsInterval.
	flushed := func() client.RunStatsPoint {
		st, err := e.c.Inspector().RunStats(ctx, webhookTask.Name(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return st.Total
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p := flushed(); p.Ended >= 6 && p.Duplicates >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counts written: %+v, want 6 runs ended and 6 duplicates", flushed())
		}
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	defer cancelAlloc()
	browserCtx, closeBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	defer closeBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	admin := &tab{t: t, ctx: browserCtx, dir: dir}
	admin.signIn(e.url, testToken, "charts")
	check := func(page, who string) {
		admin.waitJS(page+": eight charts", `document.querySelectorAll('#live svg.chart[role="img"]').length === 8`)
		got := eval[string](admin, page+": the first chart's title", `document.querySelector('#live svg.chart title').textContent`)
		if want := "Throughput, " + who + ", last hour"; got != want {
			t.Errorf("%s: first chart titled %q, want %q", page, got, want)
		}
		// The hour's "started" line rises off the baseline (y of 0 is the
		// largest y a point can have).
		if !eval[bool](admin, page+": the started line", `(() => {
			const ys = document.querySelector('#live svg.chart polyline.s1').getAttribute('points').split(' ').map(p => +p.split(',')[1]);
			return Math.min(...ys) < Math.max(...ys) })()`) {
			t.Errorf("%s: the throughput chart's started line is flat after six runs", page)
		}
		heading := eval[string](admin, page+": the hour's totals", `document.querySelector('#live section.charts h2').textContent`)
		if want := "Last hour: 6 started, 6 ended, 0 failed, 0 retried, 6 duplicates"; heading != want {
			t.Errorf("%s: %q, want %q", page, heading, want)
		}
		if !eval[bool](admin, page+": the queue row", fmt.Sprintf(`[...document.querySelectorAll('#queues td a')].some(a => a.textContent === %s)`, jsString(webhookTask.Name()))) {
			t.Errorf("%s: no queue row for the task", page)
		}
	}
	admin.do("open the overview", chromedp.Navigate(e.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("overview")))
	check("overview", "all tasks")
	admin.shot("charts-overview")
	admin.do("open the task's page", chromedp.Click(chromedp.CSS(`#queues a[href="/ui/tasks/`+webhookTask.Name()+`"]`)),
		chromedp.WaitVisible(chromedp.ID("queues")))
	check("task page", "task "+webhookTask.Name())
	admin.shot("charts-task")
}
