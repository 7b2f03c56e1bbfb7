package webui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/runview"
	"github.com/taskq/taskq/pkg/client"
)

// pageSize is how many rows a list page shows.
const pageSize = 50

// pollURL is the request's URL asking for its live fragment.
func pollURL(r *http.Request) string {
	q := r.URL.Query()
	q.Del("done")
	q.Set("fragment", "1")
	return r.URL.Path + "?" + q.Encode()
}

// done is the confirmation of an action the page was sent back to, chosen
// from fixed texts (a link cannot make the page say something else).
func done(r *http.Request) string {
	switch r.URL.Query().Get("done") {
	case "cancelled":
		return "The run was cancelled."
	case "cancel-ended":
		return "The run had already ended: nothing was cancelled."
	case "retried":
		return "The run was retried: this is the new run, with the same input and metadata."
	case "retry-debounced":
		return "The retry's input was taken by this run, which was waiting in its debounce window: no run was created."
	case "released":
		return "The key was released: the next trigger with it creates a run."
	case "paused":
		return "The task was paused: workers start none of its runs until it is resumed; triggers are still accepted."
	case "already-paused":
		return "The task was paused already."
	case "resumed":
		return "The task was resumed: workers start its runs again."
	case "already-resumed":
		return "The task was not paused."
	case "schedule-pause":
		return "The schedule was paused: its ticks do not fire until it is resumed."
	case "schedule-resume":
		return "The schedule was resumed: it fires from its next tick."
	case "schedule-triggered":
		return "The schedule was triggered now: this is its run."
	}
	return ""
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request, s *session) {
	d, err := u.countRuns(r.Context())
	if err != nil {
		u.failErr(w, r, s, "read the runs", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "overview", &view{Title: "Overview", Nav: "overview", Poll: pollURL(r), SlowPoll: true, Data: d})
}

// runsData is the runs page.
type runsData struct {
	Task, Status, Q string
	Tasks           []string
	Statuses        []client.Status
	Runs            []*client.RunInfo
	NextCursor      string
	// NextURL continues the listing; Pager goes back and forth.
	NextURL string
	Pager   *pageNav
	// Filter says what a search kept.
	Filter string
	// Metadata is the same field search on the metadata side, offered
	// when the field was named without a side.
	Metadata string
	// NoMatch is set when q named no run and no held key.
	NoMatch bool
	// Suppressed counts the suppressed triggers of the key searched for
	// (up to suppressedCountMax; SuppressedMore when there are more).
	Suppressed     int
	SuppressedMore bool
}

func (u *UI) runs(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	d := &runsData{Task: q.Get("task"), Status: q.Get("status"), Q: strings.TrimSpace(q.Get("q")), Statuses: statuses()}
	if d.Status != "" && !slices.Contains(d.Statuses, client.Status(d.Status)) {
		u.fail(w, r, s, http.StatusBadRequest, "There is no status "+quote(d.Status)+".")
		return
	}
	cursor := q.Get("cursor")
	if d.Q != "" && cursor == "" && !fragment(r) {
		id, via, err := u.lookup(ctx, d.Q)
		if err != nil {
			u.failErr(w, r, s, "search", err)
			return
		}
		if id != "" {
			to := "/ui/runs/" + url.PathEscape(id)
			if via == "key" {
				to += "?key=" + url.QueryEscape(d.Q)
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
	}
	o := client.ListOptions{Task: d.Task, Status: client.Status(d.Status), Cursor: cursor, Limit: pageSize}
	if d.Q != "" {
		f := parseSearch(d.Q)
		d.Filter, d.Metadata, d.NoMatch = f.Describe, f.Metadata, f.Key != ""
		o.Key, o.Where = f.Key, f.Where
		if f.Key != "" && !fragment(r) && cursor == "" {
			var err error
			if d.Suppressed, d.SuppressedMore, err = u.countSuppressed(ctx, client.ListOptions{Key: f.Key}); err != nil {
				u.failErr(w, r, s, "read the key's suppressed triggers", err)
				return
			}
		}
		if f.None {
			d.Runs = []*client.RunInfo{}
		}
	}
	if d.Runs == nil {
		page, err := u.in.ListRuns(ctx, o)
		if err != nil {
			u.failErr(w, r, s, "list the runs", err)
			return
		}
		d.Runs, d.NextCursor = page.Items, page.NextCursor
	}
	d.Pager = newPageNav(r, "/ui/runs", url.Values{"task": {d.Task}, "status": {d.Status}, "q": {d.Q}}, d.NextCursor, len(d.Runs))
	if d.Task == "" && d.Status == "" && d.Q == "" && d.Pager.OlderURL != "" {
		// Unfiltered, the runs index's size is the total; a filter has
		// no index to count, so its total shows once its last page does.
		total, err := u.total(ctx, func(ctx context.Context, e engine.Engine) (int64, error) { return e.IndexedRuns(ctx) })
		if err != nil {
			u.failErr(w, r, s, "count the runs", err)
			return
		}
		d.Pager.withTotal(total)
	}
	d.NextURL = d.Pager.OlderURL
	if !fragment(r) {
		tasks, err := u.in.ListTasks(ctx)
		if err != nil {
			u.failErr(w, r, s, "list the tasks", err)
			return
		}
		for _, t := range tasks {
			d.Tasks = append(d.Tasks, t.Spec.Name)
		}
	}
	u.render(w, r, s, http.StatusOK, "runs", &view{Title: "Runs", Nav: "runs", Poll: pollURL(r), SlowPoll: d.Filter != "", Flash: done(r), Data: d})
}

// moment is one line of a run's timeline.
type moment struct {
	At   time.Time
	What string
}

// runData is the run page.
type runData struct {
	Run *client.RunInfo
	// Key is the run's idempotency key as it stands now: nil when nobody
	// holds it.
	Key *client.KeyInfo
	// KeyHeldByRun says the run itself holds its key.
	KeyHeldByRun bool
	// SearchedKey is the key the visitor searched for to come here.
	SearchedKey string
	Timeline    []moment
	MaxAttempts int
	// Counted and Redelivered split the run's attempts (see
	// runview.CountedAttempts).
	Counted, Redelivered int
	// Signals and Steps are the first page of the run's signals and
	// durable steps (read only when it has some: Run.SignalCount and
	// Run.StepCount say how many).
	Signals []client.SignalInfo
	Steps   []client.StepInfo
	// MaxHistory is how many attempts that did not succeed a run keeps.
	MaxHistory int
	// Suppressed counts the triggers that created no run because this run
	// held their key (read on a full page load only, not on a refresh):
	// up to suppressedCountMax, SuppressedMore when there are more.
	Suppressed     int
	SuppressedMore bool
	// Parent is the run that spawned this one, read for its task and
	// status (nil when it has none, or its record expired: Run.Parent
	// still names it); Children the first childrenShown of the runs it
	// spawned (Run.Children has them all).
	Parent   *client.RunInfo
	Children []client.ChildInfo
	// Layers are a workflow run's nodes by layer (Run.Workflow), drawn
	// as its DAG; none for another run.
	Layers [][]client.WorkflowNode
}

// childrenShown is how many children the run page lists.
const childrenShown = 50

// pathRun reads the run the request's path names, or answers the request
// (404 for a run that does not exist, or whose record expired after its
// retention) and returns nil.
func (u *UI) pathRun(w http.ResponseWriter, r *http.Request, s *session) *client.RunInfo {
	id := r.PathValue("id")
	run, err := u.in.GetRun(r.Context(), id)
	if errors.Is(err, client.ErrRunNotFound) {
		u.fail(w, r, s, http.StatusNotFound, "There is no run "+quote(id)+" (its record may have expired after its retention).")
		return nil
	}
	if err != nil {
		u.failErr(w, r, s, "read the run", err)
		return nil
	}
	return run
}

func (u *UI) run(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	run := u.pathRun(w, r, s)
	if run == nil {
		return
	}
	d := &runData{Run: run, MaxAttempts: run.Retries + 1}
	d.Counted, d.Redelivered = runview.CountedAttempts(run)
	if run.IdempotencyKey != "" {
		k, err := u.in.GetKey(ctx, run.IdempotencyKey)
		var nh *client.StateError
		switch {
		case errors.As(err, &nh) && errors.Is(nh.Kind, client.ErrKeyNotHeld):
		case err != nil:
			u.failErr(w, r, s, "read the run's key", err)
			return
		default:
			d.Key, d.KeyHeldByRun = k, k.OwnerRunID == run.ID
		}
	}
	if key := r.URL.Query().Get("key"); key != "" && key == run.IdempotencyKey && d.KeyHeldByRun {
		d.SearchedKey = key // said only when true: a link cannot make the page claim it
	}
	accepted := "accepted and queued"
	if run.Scheduled {
		accepted = "accepted, key claimed; waiting for its scheduled time"
	}
	d.Timeline = append(d.Timeline, moment{run.CreatedAt, accepted})
	d.Timeline = append(d.Timeline, attemptMoments(run.Attempts)...)
	switch {
	case run.Scheduled:
		d.Timeline = append(d.Timeline, moment{*run.ScheduledAt, "due: queued at its scheduled time (RunAt, RunIn)"})
	case run.ScheduledAt != nil && run.Status == client.StatusWaiting:
		d.Timeline = append(d.Timeline, moment{*run.ScheduledAt, "wakes: the handler's durable wait (" + run.Waiting + ") ends"})
	case run.ScheduledAt != nil && run.Waiting != "":
		d.Timeline = append(d.Timeline, moment{*run.ScheduledAt, "tried again: held back by " + run.Waiting})
	case run.ScheduledAt != nil:
		d.Timeline = append(d.Timeline, moment{*run.ScheduledAt, "due again (retry or debounce window)"})
	}
	if run.FinishedAt != nil {
		what := "run " + string(run.Status)
		if run.Error != "" {
			what += ": " + run.Error
		}
		d.Timeline = append(d.Timeline, moment{*run.FinishedAt, what})
	}
	slices.SortStableFunc(d.Timeline, func(a, b moment) int { return a.At.Compare(b.At) })
	if err := u.runParts(ctx, d); err != nil {
		u.failErr(w, r, s, "read the run's signals and steps", err)
		return
	}
	if err := u.runFamily(ctx, d); err != nil {
		u.failErr(w, r, s, "read the run's parent", err)
		return
	}
	if run.IdempotencyKey != "" && !fragment(r) {
		var err error
		if d.Suppressed, d.SuppressedMore, err = u.countSuppressed(ctx, client.ListOptions{Owner: run.ID}); err != nil {
			u.failErr(w, r, s, "read the run's suppressed triggers", err)
			return
		}
	}
	u.render(w, r, s, http.StatusOK, "run", &view{Title: "Run " + run.ID, Nav: "runs", Poll: pollURL(r), Flash: done(r), Data: d})
}

// runPartsShown is how many signals and steps the run page shows.
const runPartsShown = 20

// runParts reads the first page of the run's signals and steps, for a run
// that has some.
func (u *UI) runParts(ctx context.Context, d *runData) error {
	d.MaxHistory = client.MaxAttemptHistory
	if d.Run.SignalCount > 0 {
		page, err := u.in.RunSignals(ctx, d.Run.ID, client.ListOptions{Limit: runPartsShown})
		if err != nil && !errors.Is(err, client.ErrRunNotFound) {
			return err
		}
		if page != nil {
			d.Signals = page.Items
		}
	}
	if d.Run.StepCount > 0 {
		page, err := u.in.RunSteps(ctx, d.Run.ID, client.ListOptions{Limit: runPartsShown})
		if err != nil && !errors.Is(err, client.ErrRunNotFound) {
			return err
		}
		if page != nil {
			d.Steps = page.Items
			if len(d.Steps) > runPartsShown {
				d.Steps = d.Steps[:runPartsShown]
			}
		}
	}
	return nil
}

// runFamily reads the run's parent, and picks the children the page
// lists.
func (u *UI) runFamily(ctx context.Context, d *runData) error {
	d.Children = d.Run.Children[:min(len(d.Run.Children), childrenShown)]
	for _, n := range d.Run.Workflow {
		for len(d.Layers) <= n.Layer {
			d.Layers = append(d.Layers, nil)
		}
		d.Layers[n.Layer] = append(d.Layers[n.Layer], n)
	}
	if d.Run.Parent == "" {
		return nil
	}
	p, err := u.opts.Client.Handle(d.Run.Parent).Get(ctx)
	if err != nil && !errors.Is(err, client.ErrRunNotFound) {
		return err
	}
	d.Parent = p
	return nil
}

// attemptMoments are the lines of a run's timeline its attempts make: when
// each began, and when each that did not end the run ended and how (the
// run's end is a line of its own).
func attemptMoments(as []client.AttemptInfo) []moment {
	var out []moment
	for _, a := range as {
		n := "attempt " + itoa(a.Attempt)
		if a.StartedAt != nil {
			what := n + " began"
			if a.Worker != "" {
				what += " on worker " + a.Worker
			}
			out = append(out, moment{*a.StartedAt, what})
		}
		if a.EndedAt == nil {
			continue
		}
		var what string
		switch a.Outcome {
		case client.AttemptRetry:
			what = n + " failed, retry scheduled"
		case client.AttemptLapsed:
			what = n + " lost its lease; the run was delivered again"
		case client.AttemptRequeued:
			what = n + " given back to the queue as its worker shut down"
		default:
			continue
		}
		if a.Error != "" && a.Outcome != client.AttemptLapsed && a.Outcome != client.AttemptRequeued {
			what += ": " + a.Error
		}
		out = append(out, moment{*a.EndedAt, what})
	}
	return out
}

func (u *UI) confirmCancel(w http.ResponseWriter, r *http.Request, s *session) {
	run := u.pathRun(w, r, s)
	if run == nil {
		return
	}
	u.render(w, r, s, http.StatusOK, "cancel", &view{Title: "Cancel run " + run.ID, Nav: "runs", Data: run})
}

func (u *UI) cancel(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	// A run that has ended is not cancelled again (nor logged as if it
	// were): the audit log holds the cancels that changed a run.
	before, err := u.in.GetRun(r.Context(), id)
	if errors.Is(err, client.ErrRunNotFound) {
		u.fail(w, r, s, http.StatusNotFound, "There is no run "+quote(id)+".")
		return
	}
	if err != nil {
		u.failErr(w, r, s, "read the run", err)
		return
	}
	st := before.Status
	if !st.Terminal() {
		st, err = u.opts.Client.Handle(id).Cancel(r.Context())
		if errors.Is(err, client.ErrRunNotFound) {
			u.fail(w, r, s, http.StatusNotFound, "There is no run "+quote(id)+".")
			return
		}
		if err != nil {
			u.failErr(w, r, s, "cancel the run", err)
			return
		}
		if st == client.StatusCancelled {
			u.log.Info("taskq: run cancelled from the dashboard", "run", id, "was", before.Status, "session", s.ID, "remote", clientAddr(r))
		}
	}
	outcome := "cancelled"
	if before.Status.Terminal() || st != client.StatusCancelled {
		outcome = "cancel-ended"
	}
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(id)+"?done="+outcome, http.StatusSeeOther)
}

// keysData is the keys page.
type keysData struct {
	Match   string
	Keys    []*client.KeyInfo
	NextURL string
	Pager   *pageNav
}

func (u *UI) keys(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := &keysData{Match: q.Get("match")}
	page, err := u.in.ListKeys(r.Context(), client.ListOptions{Match: d.Match, Cursor: q.Get("cursor"), Limit: pageSize * 2})
	if err != nil {
		u.failErr(w, r, s, "list the keys", err)
		return
	}
	d.Keys = page.Items
	slices.SortFunc(d.Keys, func(a, b *client.KeyInfo) int { return strings.Compare(a.Key, b.Key) })
	d.Pager = newPageNav(r, "/ui/keys", url.Values{"match": {d.Match}}, page.NextCursor, len(d.Keys)).noTotal()
	d.NextURL = d.Pager.OlderURL
	u.render(w, r, s, http.StatusOK, "keys", &view{Title: "Keys", Nav: "keys", Poll: pollURL(r), Flash: done(r), Data: d})
}

func (u *UI) confirmRelease(w http.ResponseWriter, r *http.Request, s *session) {
	key := r.URL.Query().Get("key")
	k, err := u.in.GetKey(r.Context(), key)
	var nh *client.StateError
	if errors.As(err, &nh) && errors.Is(nh.Kind, client.ErrKeyNotHeld) {
		u.fail(w, r, s, http.StatusNotFound, "No run holds the key "+quote(key)+" now: there is nothing to release.")
		return
	}
	if err != nil {
		u.failErr(w, r, s, "read the key", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "release", &view{Title: "Release key", Nav: "keys", Data: k})
}

func (u *UI) release(w http.ResponseWriter, r *http.Request, s *session) {
	key, owner := r.PostForm.Get("key"), r.PostForm.Get("owner")
	if key == "" || owner == "" {
		u.fail(w, r, s, http.StatusBadRequest, "A release names the key and the run that holds it.")
		return
	}
	_, err := u.in.ReleaseKey(r.Context(), key, owner)
	var nh *client.StateError
	switch {
	case errors.As(err, &nh) && errors.Is(nh.Kind, client.ErrKeyNotHeld):
		u.fail(w, r, s, http.StatusConflict, "No run holds the key "+quote(key)+" any more: nothing was released.")
		return
	case errors.Is(err, client.ErrKeyOwnerChanged):
		u.fail(w, r, s, http.StatusConflict, err.Error()+": nothing was released.")
		return
	case err != nil:
		u.failErr(w, r, s, "release the key", err)
		return
	}
	u.log.Info("taskq: idempotency key released from the dashboard", "key", key, "run", owner, "session", s.ID, "remote", clientAddr(r))
	http.Redirect(w, r, "/ui/keys?done=released", http.StatusSeeOther)
}

// eventsData is the events page.
type eventsData struct {
	Key     string
	Events  []*client.EventInfo
	NextURL string
	Pager   *pageNav
}

func (u *UI) events(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := &eventsData{Key: q.Get("key")}
	page, err := u.in.ListEvents(r.Context(), client.ListOptions{Key: d.Key, Cursor: q.Get("cursor"), Limit: pageSize})
	if err != nil {
		u.failErr(w, r, s, "list the events", err)
		return
	}
	d.Events = page.Items
	d.Pager = newPageNav(r, "/ui/events", url.Values{"key": {d.Key}}, page.NextCursor, len(d.Events))
	if d.Pager.OlderURL != "" {
		total, err := u.total(r.Context(), func(ctx context.Context, e engine.Engine) (int64, error) { return e.IndexedEvents(ctx, d.Key) })
		if err != nil {
			u.failErr(w, r, s, "count the events", err)
			return
		}
		d.Pager.withTotal(total)
	}
	d.NextURL = d.Pager.OlderURL
	u.render(w, r, s, http.StatusOK, "events", &view{Title: "Events", Nav: "events", Poll: pollURL(r), Data: d})
}

func (u *UI) event(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := u.in.GetEvent(r.Context(), r.PathValue("id"))
	if errors.Is(err, client.ErrEventNotFound) {
		u.fail(w, r, s, http.StatusNotFound, "There is no event "+quote(r.PathValue("id"))+" (it may have expired after its retention).")
		return
	}
	if err != nil {
		u.failErr(w, r, s, "read the event", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "event", &view{Title: "Event " + e.ID, Nav: "events", Data: e})
}

func (u *UI) workers(w http.ResponseWriter, r *http.Request, s *session) {
	ws, err := u.in.ListWorkers(r.Context())
	if err != nil {
		u.failErr(w, r, s, "list the workers", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "workers", &view{Title: "Workers", Nav: "workers", Poll: pollURL(r), Data: ws})
}

// total reads how many items an unfiltered listing holds, the size of its
// index: of the runs, or the events (of one event key), summed over the
// partitions in one round trip. Items whose records expired are counted
// until the sweep removes their entries.
func (u *UI) total(ctx context.Context, count func(context.Context, engine.Engine) (int64, error)) (int, error) {
	l := clientlink.Of(u.opts.Client)
	ctx, cancel := context.WithTimeout(ctx, l.OperationTimeout)
	defer cancel()
	n, err := count(ctx, l.Engine)
	return int(n), l.Unavailable(ctx, err)
}
