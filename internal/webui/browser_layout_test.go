package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
)

// widths are the screen widths every page is checked at: a phone's and a
// laptop's.
var widths = []int64{390, 1280}

// layoutPages fills a namespace with a bit of everything (runs with long
// keys, attempts, signals and steps; a suppressed trigger; an event; a
// schedule; a run with a parent and children) and returns every page of
// the dashboard, by name.
func layoutPages(t *testing.T, e *env) []struct{ name, path string } {
	t.Helper()
	ctx := context.Background()
	long := strings.Repeat("tenant-acme-eu-west-1/", 6) + "invoice-2026-12-05"
	run := e.trigger(ctx, order{ID: long, Amount: 4200}, client.WithMetadata(map[string]any{"tenant": "acme", "region": "eu-west-1", "note": strings.Repeat("a long note ", 20)}))
	if _, err := client.RunNoWait(ctx, e.c, orderTask, order{ID: long}); err == nil {
		t.Fatal("the duplicate trigger was not suppressed")
	}
	e.failAttempt(ctx, run, "worker-on-a-host-with-a-rather-long-name-01", "card declined: the issuing bank refused the charge (code do_not_honor); retried in one hour "+strings.Repeat("x", 80))
	st := clientlink.Store(e.c)
	if _, err := st.SignalRun(ctx, run, "approval-signal-with-a-long-identifier", []byte(`{"approvedBy":"someone@example.com","comment":"`+strings.Repeat("looks good ", 15)+`"}`), 10); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.SaveStepResult(ctx, run, fmt.Sprintf("charge-the-customer-card-step-%d-with-a-long-name", i), []byte(`{"chargeId":"ch_`+strings.Repeat("0123456789", 8)+`","html":"<b>ok</b>"}`)); err != nil {
			t.Fatal(err)
		}
	}
	cancelled := e.trigger(ctx, order{ID: "layout-cancelled"})
	if _, err := e.c.Handle(cancelled).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e.trigger(ctx, order{ID: fmt.Sprintf("layout-%d-%s", i, strings.Repeat("k", 40))})
	}
	hook := task.Must[map[string]any, map[string]any]("ui-layout-webhook", task.Options{
		Idempotency: task.TTL(`"evt:" + input.id`, time.Hour), OnEvents: []string{"ui.layout.webhook"}})
	e.register(hook.Definition())
	ing, err := events.New(e.c, events.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ing.Push(ctx, "ui.layout.webhook", json.RawMessage(`{"id":"evt-`+strings.Repeat("9", 60)+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Schedules().Create(ctx, task.Schedule{Name: "nightly-invoices-for-every-tenant", Task: orderTask.Name(), Cron: "0 2 * * *",
		TimeZone: "Europe/Paris", KeyExpression: `"invoice:" + schedule.name + ":" + string(schedule.time)`}); err != nil {
		t.Fatal(err)
	}
	_, child, _ := e.family(ctx)
	key := "order:" + long
	return []struct{ name, path string }{
		{"overview", "/ui/"},
		{"runs", "/ui/runs"},
		{"runs-filtered", "/ui/runs?" + url.Values{"task": {orderTask.Name()}, "status": {"queued"}}.Encode()},
		{"run", "/ui/runs/" + run},
		{"run-cancelled", "/ui/runs/" + cancelled},
		{"cancel", "/ui/runs/" + run + "/cancel"},
		{"retry", "/ui/runs/" + cancelled + "/retry"},
		{"suppressed", "/ui/suppressed"},
		{"keys", "/ui/keys"},
		{"release", "/ui/keys/release?" + url.Values{"key": {key}}.Encode()},
		{"events", "/ui/events"},
		{"event", "/ui/events/" + ev.ID},
		{"workers", "/ui/workers"},
		{"schedules", "/ui/schedules"},
		{"session", "/ui/session"},
		{"not-found", "/ui/no-such-page"},
		{"run-family", "/ui/runs/" + child},
	}
}

// sideways is how far the page scrolls sideways (0: not at all).
const sideways = `document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth`

// open shows path at width and waits for the page to be laid out.
func (b *tab) open(base, path string, width int64) {
	b.t.Helper()
	b.do("open "+path, chromedp.EmulateViewport(width, 844), chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("main")))
}

// Every page at a phone's width and a laptop's: nothing scrolls sideways,
// the header stays inside the page, and a read-only session finds no form
// that posts on any of them. Screenshots of each are saved.
func TestEveryPageFitsPhonesAndDesktops(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{PollInterval: time.Hour}})
	pages := layoutPages(t, e)
	newTab := startChromium(t, exe, dir)
	admin, closeAdmin := newTab()
	defer closeAdmin()
	reader, closeReader := newTab()
	defer closeReader()
	admin.signIn(e.url, testToken, "admin")
	reader.signIn(e.url, testReadOnly, "reader")

	for _, w := range widths {
		for _, p := range pages {
			admin.open(e.url, p.path, w)
			if d := eval[int](admin, "measure "+p.name, sideways); d > 0 {
				t.Errorf("%s at %d px scrolls sideways by %d px", p.name, w, d)
			}
			if d := eval[int](admin, "measure the header of "+p.name, `Math.ceil(Math.max(0, ...[...document.querySelectorAll('header.top > *, header.top nav a')].map(el => el.getBoundingClientRect().right - document.documentElement.clientWidth)))`); d > 0 {
				t.Errorf("%s at %d px: the header spills %d px out of the page", p.name, w, d)
			}
			admin.shot(fmt.Sprintf("%s-%d", p.name, w))

			reader.open(e.url, p.path, w)
			if d := eval[int](reader, "measure "+p.name, sideways); d > 0 {
				t.Errorf("%s at %d px, read-only, scrolls sideways by %d px", p.name, w, d)
			}
			if n := eval[int](reader, "count forms that post", `document.querySelectorAll('form[method="post" i]').length`); n != 0 {
				t.Errorf("%s offers the read-only session %d forms that post", p.name, n)
			}
		}
	}
	// At a phone's width the steps and attempts keep readable columns:
	// the attempts table scrolls in its box rather than squeezing one.
	admin.open(e.url, pages[3].path, 390)
	if minW := eval[float64](admin, "measure the attempt cells", `Math.min(...[...document.querySelectorAll('#attempt-list td, #attempt-list th')].map(td => td.getBoundingClientRect().width))`); minW < 24 {
		t.Errorf("at 390 px an attempts column is %.0f px wide: squeezed", minW)
	}
	if h := eval[float64](admin, "measure the run page", `document.scrollingElement.scrollHeight`); h > 4500 {
		t.Errorf("at 390 px the run page is %.0f px tall", h)
	}
	admin.shot("run-390-top")
}

// A session copied before sign-out is refused after it, and "Sign out
// everywhere" ends another browser's session; both from the pages' own
// links and buttons.
func TestSignOutInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{PollInterval: time.Hour}})
	newTab := startChromium(t, exe, dir)
	admin, closeAdmin := newTab()
	defer closeAdmin()
	other, closeOther := newTab()
	defer closeOther()

	admin.signIn(e.url, testToken, "admin")
	got, err := chromedp.Call(admin.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil || len(got.Cookies) == 0 {
		t.Fatalf("read the session cookie: %v, %+v", err, got)
	}
	old := got.Cookies[0]
	admin.do("sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token")))
	if got := eval[string](admin, "read the page", `document.querySelector('#flash') ? document.querySelector('#flash').textContent : ''`); !strings.Contains(got, "You signed out") {
		t.Errorf("after sign-out the sign-in page says %q", got)
	}
	if _, err := chromedp.Call(admin.ctx, network.SetCookie, network.SetCookieParams{Name: old.Name, Value: old.Value, Domain: old.Domain, Path: old.Path}); err != nil {
		t.Fatalf("put back the old cookie: %v", err)
	}
	admin.do("open a page with the old cookie", chromedp.Navigate(e.url+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("token")))
	admin.shot("signed-out-old-cookie")

	admin.signIn(e.url, testToken, "admin-again")
	other.signIn(e.url, testReadOnly, "reader")
	admin.do("open the session page", chromedp.Click(chromedp.ID("who")), chromedp.WaitVisible(chromedp.ID("signout-everywhere")))
	admin.shot("session")
	admin.do("sign out everywhere", chromedp.Click(chromedp.ID("signout-everywhere")), chromedp.WaitVisible(chromedp.ID("token")))
	other.do("reload in the other browser", chromedp.Navigate(e.url+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("token")))
}

// Sign-in is throttled in the browser too: the page says why and when to
// try again.
func TestSignInThrottleInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	e := newEnv(t, redistest.Mini(t), envOptions{})
	newTab := startChromium(t, exe, dir)
	b, closeTab := newTab()
	defer closeTab()
	b.do("open the sign-in page", chromedp.Navigate(e.url+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")))
	for range signInFailuresMax + 1 {
		// A fresh sign-in page each time, with no error on it yet.
		b.do("sign in with a wrong token", chromedp.Navigate(e.url+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SetValue(chromedp.ID("token"), "not-the-token-0123456789"), chromedp.Click(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("login-error")))
	}
	got := eval[string](b, "read the error", `document.querySelector('#login-error').textContent`)
	if !strings.Contains(got, "Too many failed sign-ins") {
		t.Errorf("after %d wrong tokens the page says %q", signInFailuresMax+1, got)
	}
	status := eval[int](b, "sign in once more", `fetch('/ui/login', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'token=x'}).then(r => r.status + (r.headers.get('Retry-After') > 0 ? 1000 : 0))`)
	if status != 1429 {
		t.Errorf("a throttled sign-in answered %d (1000 added when Retry-After is set), want 1429", status)
	}
	b.shot("signin-throttled")
}

// With Redis failing, a page's refresh keeps its last data and shows a
// banner saying why; once Redis answers the banner goes.
func TestAutoRefreshKeepsTheDataWhenRedisFails(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	be := redistest.Mini(t)
	e := newEnv(t, be, envOptions{ui: Options{PollInterval: 200 * time.Millisecond}})
	run := e.trigger(context.Background(), order{ID: "refresh-1"})
	newTab := startChromium(t, exe, dir)
	b, closeTab := newTab()
	defer closeTab()
	b.signIn(e.url, testToken, "refresh")
	b.do("open the runs", chromedp.Navigate(e.url+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("runs")))
	has := fmt.Sprintf(`document.querySelector('#runs a.run-link[href=%s]') !== null`, jsString("/ui/runs/"+run))
	b.waitJS("the run listed", has)
	be.Mini.SetError("LOADING Redis is loading the dataset in memory")
	b.waitJS("the banner", `(() => { const el = document.querySelector('#stale-banner'); return el !== null && !el.hidden && el.textContent.includes('Could not refresh') })()`)
	if !eval[bool](b, "check the table is kept", has+` && document.querySelector('#live .error') === null`) {
		t.Error("with Redis failing the refresh replaced the table")
	}
	banner := eval[string](b, "read the banner", `document.querySelector('#stale-banner').textContent`)
	if !strings.Contains(banner, "Showing the data as of") {
		t.Errorf("the banner says %q", banner)
	}
	b.shot("refresh-failing")
	be.Mini.SetError("")
	b.waitJS("the banner gone", `document.querySelector('#stale-banner').hidden && `+has)
}
