package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Environment of the browser test.
const (
	// chromiumEnv names the Chromium (or Chrome) binary; unset, the test
	// looks for chromium, chromium-browser, google-chrome on the PATH.
	chromiumEnv = "TASKQ_TEST_CHROMIUM"
	// screenshotsEnv names the folder the test saves its screenshots in
	// (default: bin/ui-screenshots at the module's root).
	screenshotsEnv = "TASKQ_UI_SCREENSHOTS"
)

// hostileKeyID makes the key "order:<script>window.pwned=1</script>".
const hostileKeyID = "<script>window.pwned=1</script>"

// webhookTask runs on events; the test's worker handles it.
var webhookTask = task.Must[map[string]any, map[string]any]("ui-webhook", task.Options{
	Idempotency: task.TTL(`"evt:" + input.id`, time.Hour),
	OnEvents:    []string{"ui.webhook"},
})

// chromium returns the browser binary, or fails the test saying how to
// install one: the dashboard's test is never skipped silently.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("the dashboard's browser test needs Chromium, and none is on the PATH: install it (Debian, Ubuntu: sudo apt-get install -y chromium; .ci/run does it when it is missing), or name a Chromium or Chrome binary in $%s", chromiumEnv)
	return ""
}

// screenshots returns the folder screenshots go to, made if need be.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			t.Fatalf("module root not found from the package folder (%v): set $%s", err, screenshotsEnv)
		}
		dir = filepath.Join(root, "bin", "ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// tab is one browser tab with its own cookies.
type tab struct {
	t   *testing.T
	ctx context.Context
	dir string
}

// do runs actions, failing the test with what was being done.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

// fail saves a screenshot of the tab and fails the test.
func (b *tab) fail(what string, err error) {
	b.t.Helper()
	b.shot("failure")
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	b.t.Fatalf("%s (at %s): %v", what, loc, err)
}

// waitJS waits until expr, evaluated in the page, is truthy, and returns it
// as JSON. Everything inside a page's live part is read this way, in one
// evaluation, since a poll may replace those nodes at any moment.
func (b *tab) waitJS(what, expr string) json.RawMessage {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[json.RawMessage](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		b.fail("wait for "+what, err)
	}
	return v
}

// eval evaluates expr (a promise is awaited) and decodes its value.
func eval[T any](b *tab, what, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail(what, err)
	}
	return v
}

// shot saves a full-page screenshot as name.png.
func (b *tab) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
}

// signIn opens the dashboard, is sent to the sign-in page and signs in.
func (b *tab) signIn(url, token, as string) {
	b.t.Helper()
	b.do("open the dashboard", chromedp.Navigate(url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.shot("signin-" + as)
	b.do("sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("overview")))
}

// startChromium starts a headless Chromium for the test, stopped at its
// end, and returns a function that opens a tab with its own cookies.
func startChromium(t *testing.T, exe, dir string) func() (*tab, context.CancelFunc) {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	t.Cleanup(cancelAlloc)
	browserCtx, closeBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(closeBrowser)
	if err := chromedp.Do(browserCtx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", exe, err)
	}
	return func() (*tab, context.CancelFunc) {
		tctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
		// The first call on a context opens its tab for as long as that
		// call's context lives: without a timeout, then.
		if err := chromedp.Do(tctx); err != nil {
			t.Fatalf("open a tab: %v", err)
		}
		return &tab{t: t, ctx: tctx, dir: dir}, cancel
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDashboardInABrowser drives the dashboard in a headless Chromium: sign
// in, trigger a run and its duplicate, find the duplicate by key under
// suppressed triggers and follow it to the owner, cancel the owner and see
// its key released, retry it and see the new run linked both ways and
// holding the key again, see a hostile key shown and not run, and check
// that a read-only session cannot act (cancel, release, retry) and that a
// POST without the CSRF token is refused.
func TestDashboardInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	b := redistest.Real(t)
	e := newEnv(t, b, envOptions{ui: Options{Token: testToken, ReadOnlyToken: testReadOnly, PollInterval: 500 * time.Millisecond}})
	ctx := context.Background()

	// A worker runs the webhook task, so that events create runs, runs
	// succeed and the workers page has a worker; the order task has no
	// worker, so its runs stay queued until cancelled.
	w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "ui-test-worker", Logger: quiet,
		FetchBlock: 50 * time.Millisecond, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, webhookTask, func(ctx worker.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"handled": in["id"]}, nil
	}); err != nil {
		t.Fatal(err)
	}
	runWorker(ctx, t, w)
	ing, err := events.New(e.c, events.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}

	newTab := startChromium(t, exe, dir)
	admin, closeAdmin := newTab()
	defer closeAdmin()

	// Sign in, then watch the runs page pick up a run without a reload.
	admin.signIn(e.url, testToken, "admin")
	admin.do("open the runs", chromedp.Navigate(e.url+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("runs")),
		chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`)) // a reload would lose it
	owner := e.trigger(ctx, order{ID: "browser-1", Amount: 4200}, client.WithMetadata(map[string]any{"tenant": "acme"}))
	_, err = client.RunNoWait(ctx, e.c, orderTask, order{ID: "browser-1", Amount: 4200})
	var coll *client.IdempotencyCollisionError
	if !errors.As(err, &coll) || coll.ExistingRunID != owner {
		t.Fatalf("the duplicate trigger: %v, want a collision with %s", err, owner)
	}
	admin.waitJS("the new run on the runs page, by the page's own refresh",
		fmt.Sprintf(`document.querySelector('#runs a.run-link[href=%s]') !== null`, jsString("/ui/runs/"+owner)))
	if !eval[bool](admin, "check the page was not reloaded", `window.sameDocument === true`) {
		t.Error("the runs page reloaded instead of refreshing its list")
	}

	// Events: the second delivery is deduplicated to the first run.
	first, err := ing.Push(ctx, "ui.webhook", json.RawMessage(`{"id":"e-1"}`), nil)
	if err != nil || len(first.Runs) != 1 || first.Runs[0].Outcome != "created" {
		t.Fatalf("first event: %+v, %v", first, err)
	}
	if _, err := ing.Push(ctx, "ui.webhook", json.RawMessage(`{"id":"e-1"}`), nil); err != nil {
		t.Fatal(err)
	}
	admin.do("open the events", chromedp.Navigate(e.url+"/ui/events"), chromedp.WaitVisible(chromedp.ID("events")))
	admin.waitJS("the duplicate event, deduplicated to the first run",
		fmt.Sprintf(`document.querySelector('#events').textContent.includes('deduplicated to run ' + %s)`, jsString(first.Runs[0].RunID)))
	admin.shot("events")

	// The duplicate is under suppressed triggers, found by its key, and
	// leads to the run that held the key.
	admin.do("open the suppressed triggers from the menu",
		chromedp.Click(chromedp.CSS(`nav a[href="/ui/suppressed"]`)), chromedp.WaitVisible(chromedp.ID("filter-key")))
	admin.do("search the suppressed triggers by key",
		chromedp.SendKeys(chromedp.ID("filter-key"), "order:browser-1"), chromedp.Click(chromedp.ID("filter-suppressed")),
		chromedp.WaitVisible(chromedp.ID("suppressed-filter"))) // on the filtered page only: #suppressed was on the last one too
	admin.waitJS("the duplicate listed with its owner",
		fmt.Sprintf(`(() => { const rows = [...document.querySelectorAll('#suppressed tr.suppressed')];
			return rows.length === 1 && rows[0].querySelector('.key-text').textContent === 'order:browser-1' &&
				rows[0].textContent.includes('rejected') && rows[0].querySelector('a.owner-link').getAttribute('href') === %s })()`, jsString("/ui/runs/"+owner)))
	admin.shot("suppressed")
	admin.do("follow the duplicate to its owner",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#suppressed a.owner-link').click()`), chromedp.WaitVisible(chromedp.ID("run-status")))
	if got := eval[string](admin, "read the run's ID", `document.querySelector('#run-id').textContent`); got != owner {
		t.Fatalf("the suppressed trigger led to run %q, want its owner %s", got, owner)
	}
	if got := eval[string](admin, "read the suppressed count", `document.querySelector('#suppressed-count').textContent`); !strings.Contains(got, "1 suppressed trigger created no run") {
		t.Errorf("the owner's page says %q, want its one suppressed trigger counted", got)
	}

	// Search by the key: the search box opens the run that holds it.
	admin.do("search for the key",
		chromedp.SendKeys(chromedp.ID("search"), "order:browser-1"), chromedp.Submit(chromedp.ID("search")),
		chromedp.WaitVisible(chromedp.ID("via-key")))
	if got := eval[string](admin, "read the run's ID", `document.querySelector('#run-id').textContent`); got != owner {
		t.Fatalf("the key search opened run %q, want its owner %s", got, owner)
	}
	admin.waitJS("the key held by this run", `document.querySelector('#key-now').textContent.includes('held by this run')`)
	admin.shot("run")

	// Cancel the owner, with the confirmation step; its key is released.
	admin.waitJS("the cancel action", `document.querySelector('#cancel') !== null`)
	if n := eval[int](admin, "count retry actions", `document.querySelectorAll('#retry').length`); n != 0 {
		t.Error("a queued run is offered a retry")
	}
	admin.do("ask to cancel", chromedp.Evaluate[chromedp.Void](`document.querySelector('#cancel').click()`), chromedp.WaitVisible(chromedp.ID("confirm")))
	admin.shot("cancel-confirm")
	if st, _ := e.c.Inspector().GetRun(ctx, owner); st == nil || st.Status != client.StatusQueued {
		t.Fatalf("the confirmation page already changed the run: %+v", st)
	}
	admin.do("confirm the cancel", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the run cancelled", `document.querySelector('#run-status').textContent.trim() === 'cancelled'`)
	admin.waitJS("the key shown released", `document.querySelector('#key-now').textContent.includes('released')`)
	admin.shot("run-cancelled")
	var nh *client.StateError
	if _, err := e.c.Inspector().GetKey(ctx, "order:browser-1"); !(errors.As(err, &nh) && nh.Kind == client.ErrKeyNotHeld) {
		t.Errorf("after the cancel the key: %v, want released", err)
	}

	// Retry the cancelled owner, with the confirmation step: the new run
	// is shown, linked to the owner, and holds the key again.
	admin.waitJS("the retry action", `document.querySelector('#retry') !== null`)
	admin.do("ask to retry", chromedp.Evaluate[chromedp.Void](`document.querySelector('#retry').click()`), chromedp.WaitVisible(chromedp.ID("confirm")))
	admin.shot("retry-confirm")
	if r, _ := e.c.Inspector().GetRun(ctx, owner); r == nil || r.RetriedBy != "" {
		t.Fatalf("the confirmation page already retried the run: %+v", r)
	}
	admin.do("confirm the retry", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("flash")))
	admin.waitJS("the new run, a retry of the owner",
		fmt.Sprintf(`document.querySelector('#retry-of a') !== null && document.querySelector('#retry-of a').getAttribute('href') === %s`, jsString("/ui/runs/"+owner)))
	retried := eval[string](admin, "read the new run's ID", `document.querySelector('#run-id').textContent`)
	if retried == owner || retried == "" {
		t.Fatalf("after the retry the page shows run %q, want a new run", retried)
	}
	admin.waitJS("the key held again, by the retry", `document.querySelector('#key-now').textContent.includes('held by this run')`)
	admin.shot("run-retried")
	if k, err := e.c.Inspector().GetKey(ctx, "order:browser-1"); err != nil || k.OwnerRunID != retried {
		t.Errorf("after the retry the key: %+v, %v; want held by the retry %s", k, err, retried)
	}
	admin.do("follow the link to the original",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#retry-of a').click()`), chromedp.WaitVisible(chromedp.ID("retried-by")))
	admin.waitJS("the original linked to its retry",
		fmt.Sprintf(`document.querySelector('#run-id').textContent === %s && document.querySelector('#retried-by a').getAttribute('href') === %s && document.querySelector('#retry') === null`,
			jsString(owner), jsString("/ui/runs/"+retried)))

	// A hostile key is shown as text and never runs.
	hostile := e.trigger(ctx, order{ID: hostileKeyID, Amount: 1})
	var extra []string
	for i := 0; i < 3; i++ {
		extra = append(extra, e.trigger(ctx, order{ID: fmt.Sprintf("browser-extra-%d", i), Amount: 100 * (i + 1)}))
	}
	// A cancelled run, retryable, for the read-only session to be refused.
	cancelled := extra[0]
	if _, err := e.c.Handle(cancelled).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	hostileKey := "order:" + hostileKeyID
	if _, err := client.RunNoWait(ctx, e.c, orderTask, order{ID: hostileKeyID, Amount: 2}); !errors.Is(err, client.ErrIdempotencyCollision) {
		t.Fatalf("the hostile key's duplicate: %v, want a collision", err)
	}
	admin.do("open the suppressed triggers", chromedp.Navigate(e.url+"/ui/suppressed"), chromedp.WaitVisible(chromedp.ID("suppressed")))
	admin.waitJS("the hostile key shown as text among the suppressed triggers",
		fmt.Sprintf(`[...document.querySelectorAll('#suppressed .key-text')].some(el => el.textContent === %s)`, jsString(hostileKey)))
	if got := eval[string](admin, "typeof window.pwned", `typeof window.pwned`); got != "undefined" {
		t.Errorf("window.pwned is %s: the hostile key ran on the suppressed page", got)
	}
	admin.do("open the keys", chromedp.Navigate(e.url+"/ui/keys"), chromedp.WaitVisible(chromedp.ID("keys")))
	admin.waitJS("the hostile key shown as text",
		fmt.Sprintf(`[...document.querySelectorAll('#keys .key-text')].some(el => el.textContent === %s)`, jsString(hostileKey)))
	admin.shot("keys")
	admin.do("search for the hostile key",
		chromedp.SendKeys(chromedp.ID("search"), hostileKey), chromedp.Submit(chromedp.ID("search")),
		chromedp.WaitVisible(chromedp.ID("via-key")))
	if got := eval[string](admin, "read the searched key", `document.querySelector('#via-key .key-text').textContent`); got != hostileKey {
		t.Errorf("the run page shows the searched key as %q, want %q", got, hostileKey)
	}
	if got := eval[string](admin, "read the run's ID", `document.querySelector('#run-id').textContent`); got != hostile {
		t.Errorf("the hostile key's search opened %q, want %s", got, hostile)
	}
	if got := eval[string](admin, "typeof window.pwned", `typeof window.pwned`); got != "undefined" {
		t.Errorf("window.pwned is %s: the hostile key ran", got)
	}
	if n := eval[int](admin, "count scripts", `document.querySelectorAll('script').length`); n != 1 {
		t.Errorf("the page has %d script elements, want the dashboard's own only", n)
	}

	// A POST without the CSRF token is refused, even from a signed-in page.
	if status := eval[int](admin, "POST without the CSRF token", fmt.Sprintf(`fetch('/ui/runs/' + %s + '/cancel', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: ''}).then(r => r.status)`, jsString(hostile))); status != 403 {
		t.Errorf("a POST without the CSRF token answered %d, want 403", status)
	}

	// The overview counts by task and status.
	admin.do("open the overview", chromedp.Navigate(e.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("overview")))
	admin.waitJS("the order task's counts", `document.querySelector('#overview').textContent.includes('ui-order')`)
	admin.waitJS("the webhook run succeeded", `[...document.querySelectorAll('#overview tr')].some(tr => tr.textContent.includes('ui-webhook') && tr.children[4].textContent.trim() === '1')`)
	admin.shot("overview")
	admin.do("open the workers", chromedp.Navigate(e.url+"/ui/workers"), chromedp.WaitVisible(chromedp.ID("workers")))
	admin.waitJS("the worker listed live", `[...document.querySelectorAll('#workers tr.worker')].some(tr => tr.textContent.includes('ui-test-worker') && tr.textContent.includes('live'))`)
	admin.shot("workers")
	admin.do("open the runs", chromedp.Navigate(e.url+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("runs")))
	admin.shot("runs")

	// A retried run's page shows its failed attempt with the error, as
	// text.
	flaky, flakyErr := extra[1], `card declined <img src=x onerror="window.pwned=1">`
	e.failAttempt(ctx, flaky, "ui-flaky-worker", flakyErr)
	admin.do("open the retried run", chromedp.Navigate(e.url+"/ui/runs/"+flaky), chromedp.WaitVisible(chromedp.ID("attempts")))
	admin.waitJS("the failed attempt shown with its error",
		fmt.Sprintf(`[...document.querySelectorAll('#attempt-list tr.attempt')].some(tr => tr.dataset.attempt === '1' && tr.textContent.includes('ui-flaky-worker') && tr.querySelector('.attempt-error') !== null && tr.querySelector('.attempt-error').textContent === %s)`, jsString(flakyErr)))
	if got := eval[string](admin, "typeof window.pwned", `typeof window.pwned`); got != "undefined" {
		t.Errorf("window.pwned is %s: the attempt's error ran", got)
	}
	admin.shot("run-attempts")

	// A read-only session sees the same pages with no action, and a forged
	// POST with its own CSRF token is refused.
	reader, closeReader := newTab()
	defer closeReader()
	reader.signIn(e.url, testReadOnly, "reader")
	reader.do("open the hostile run", chromedp.Navigate(e.url+"/ui/runs/"+hostile), chromedp.WaitVisible(chromedp.ID("run-status")))
	if who := eval[string](reader, "read who is signed in", `document.querySelector('#who').textContent`); who != "read-only" {
		t.Errorf("the read-only session is shown as %q", who)
	}
	if n := eval[int](reader, "count actions", `document.querySelectorAll('.action, form[action$="/cancel"], form[action$="/release"]').length`); n != 0 {
		t.Errorf("the read-only session is offered %d actions on the run page", n)
	}
	reader.do("open the keys", chromedp.Navigate(e.url+"/ui/keys"), chromedp.WaitVisible(chromedp.ID("keys")))
	reader.waitJS("the keys listed", `document.querySelectorAll('#keys tr.key').length > 0`)
	if n := eval[int](reader, "count actions", `document.querySelectorAll('.action').length`); n != 0 {
		t.Errorf("the read-only session is offered %d actions on the keys page", n)
	}
	reader.shot("keys-reader")
	forged := fmt.Sprintf(`fetch('/ui/runs/' + %s + '/cancel', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'csrf=' + encodeURIComponent(new URL(document.querySelector('#signout').href).searchParams.get('csrf'))}).then(r => r.status)`, jsString(hostile))
	if status := eval[int](reader, "forged POST from the read-only session", forged); status != 403 {
		t.Errorf("a forged cancel from the read-only session answered %d, want 403", status)
	}
	forged = `fetch('/ui/keys/release', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'key=' + encodeURIComponent(` + jsString(hostileKey) + `) + '&owner=' + encodeURIComponent(` + jsString(hostile) + `) + '&csrf=' + encodeURIComponent(new URL(document.querySelector('#signout').href).searchParams.get('csrf'))}).then(r => r.status)`
	if status := eval[int](reader, "forged release from the read-only session", forged); status != 403 {
		t.Errorf("a forged release from the read-only session answered %d, want 403", status)
	}
	reader.do("open the retried run's original", chromedp.Navigate(e.url+"/ui/runs/"+cancelled), chromedp.WaitVisible(chromedp.ID("run-status")))
	reader.waitJS("the cancelled run shown", `document.querySelector('#run-status').textContent.trim() === 'cancelled'`)
	if n := eval[int](reader, "count actions", `document.querySelectorAll('.action, #retry, form[action$="/retry"]').length`); n != 0 {
		t.Errorf("the read-only session is offered %d actions on a cancelled run", n)
	}
	reader.shot("run-reader")
	forged = fmt.Sprintf(`fetch('/ui/runs/' + %s + '/retry', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'csrf=' + encodeURIComponent(new URL(document.querySelector('#signout').href).searchParams.get('csrf'))}).then(r => r.status)`, jsString(cancelled))
	if status := eval[int](reader, "forged retry from the read-only session", forged); status != 403 {
		t.Errorf("a forged retry from the read-only session answered %d, want 403", status)
	}
	if r, err := e.c.Inspector().GetRun(ctx, cancelled); err != nil || r.RetriedBy != "" {
		t.Errorf("after the refused retry the cancelled run is %+v (%v), want not retried", r, err)
	}
	if r, err := e.c.Inspector().GetRun(ctx, hostile); err != nil || r.Status != client.StatusQueued {
		t.Errorf("after the refused POSTs the hostile run is %+v (%v), want queued", r, err)
	}
	if k, err := e.c.Inspector().GetKey(ctx, hostileKey); err != nil || k.OwnerRunID != hostile {
		t.Errorf("after the refused POSTs the hostile key is %+v (%v), want held by %s", k, err, hostile)
	}
	if strings.Contains(eval[string](reader, "read the page", `document.documentElement.outerHTML`), testReadOnly) {
		t.Error("the page shows the read-only token")
	}
}
