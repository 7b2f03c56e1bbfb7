package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// taskRow is one task of the tasks page, and the head of a task's page:
// its registered definition, described, and whether it is paused.
type taskRow struct {
	task.Registered
	Paused   bool
	PausedAt time.Time
	// Hold says how long a key is held ("" without a key).
	Hold        string
	Backoff     string
	Timeout     string
	Concurrency string
	RateLimits  []string
	Schedules   []*client.ScheduleInfo
	// Queues and Charts are the task's queue counts and run statistics,
	// read for its own page only.
	Queues []client.QueueStat
	Charts *statsCharts
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// span writes a definition's duration without zero units: 1m, 2h, 1m30s.
func span(d time.Duration) string {
	s := dur(d)
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func describeTask(r task.Registered, paused map[string]time.Time) *taskRow {
	s := r.Spec
	row := &taskRow{Registered: r}
	row.PausedAt, row.Paused = paused[s.Name]
	switch s.Strategy {
	case task.StrategyTTL:
		row.Hold = "for " + span(ms(s.TTLMs)) + " from acceptance"
	case task.StrategyDebounce:
		row.Hold = "quiet window of " + span(ms(s.TTLMs))
	case task.StrategyStatus:
		row.Hold = "while the run is active, at most " + span(ms(s.FallbackTTLMs))
		if s.RetainMs > 0 {
			row.Hold += ", then " + span(ms(s.RetainMs)) + " after it ends"
		}
	}
	row.Backoff = fmt.Sprintf("%s, ×%g", span(ms(s.BackoffInitialMs)), s.BackoffFactor)
	if s.BackoffMaxMs > 0 {
		row.Backoff += ", at most " + span(ms(s.BackoffMaxMs))
	}
	if s.BackoffJitter > 0 {
		row.Backoff += fmt.Sprintf(", jitter %g", s.BackoffJitter)
	}
	if s.TimeoutMs > 0 {
		row.Timeout = span(ms(s.TimeoutMs))
	}
	for i, c := range s.Concurrency {
		if i > 0 {
			row.Concurrency += "; "
		}
		row.Concurrency += fmt.Sprintf("at most %d at once per %s (%s)", c.MaxRuns, c.Expression, c.Strategy)
	}
	for _, l := range s.RateLimits {
		limit, units := strconv.Itoa(l.Limit), strconv.Itoa(l.Units)
		if l.LimitExpression != "" {
			limit = l.LimitExpression
		}
		if l.UnitsExpression != "" {
			units = l.UnitsExpression
		}
		d := fmt.Sprintf("%s: %s units per %s, %s a run", l.Name, limit, span(time.Duration(l.PeriodUs)*time.Microsecond), units)
		if l.Key != "" {
			d += ", per " + l.Key
		}
		row.RateLimits = append(row.RateLimits, d)
	}
	return row
}

// tasksData is the tasks page.
type tasksData struct {
	Tasks []*taskRow
}

// readTasks reads the registered tasks, their paused state and the
// schedules that trigger them.
func (u *UI) readTasks(r *http.Request) ([]*taskRow, error) {
	ctx := r.Context()
	regs, err := u.in.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	paused, err := u.in.PausedTasks(ctx)
	if err != nil {
		return nil, err
	}
	scheds, err := u.opts.Client.Schedules().List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]*taskRow, len(regs))
	by := map[string]*taskRow{}
	for i, reg := range regs {
		rows[i] = describeTask(reg, paused)
		by[reg.Spec.Name] = rows[i]
	}
	for _, sc := range scheds {
		if row := by[sc.Schedule.Task]; row != nil {
			row.Schedules = append(row.Schedules, sc)
		}
	}
	return rows, nil
}

// tasks is the page of the registered tasks.
func (u *UI) tasks(w http.ResponseWriter, r *http.Request, s *session) {
	rows, err := u.readTasks(r)
	if err != nil {
		u.failErr(w, r, s, "read the tasks", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "tasks", &view{Title: "Tasks", Nav: "tasks", Poll: pollURL(r), Data: &tasksData{Tasks: rows}})
}

// taskPage is one task's page: its definition, state and schedules, with
// pause or resume for a session that may act.
func (u *UI) taskPage(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	rows, err := u.readTasks(r)
	if err != nil {
		u.failErr(w, r, s, "read the task", err)
		return
	}
	for _, row := range rows {
		if row.Spec.Name == name {
			if row.Queues, err = u.in.QueueStats(r.Context(), name); err != nil {
				u.failErr(w, r, s, "read the task's queue", err)
				return
			}
			if row.Charts, err = u.readCharts(r.Context(), name); err != nil {
				u.failErr(w, r, s, "read the task's statistics", err)
				return
			}
			u.render(w, r, s, http.StatusOK, "task", &view{Title: "Task " + name, Nav: "tasks", Poll: pollURL(r), Flash: done(r), Data: row})
			return
		}
	}
	u.failLink(w, r, s, http.StatusNotFound, "No worker has registered a task "+quote(name)+" in this namespace.",
		&link{Href: "/ui/runs?" + url.Values{"task": {name}}.Encode(), Text: "Its runs, if any"})
}

// taskPath is a task's page.
func taskPath(name string) string { return "/ui/tasks/" + url.PathEscape(name) }

// pauseTask and resumeTask serve the forms of a task's page.
func (u *UI) pauseTask(w http.ResponseWriter, r *http.Request, s *session) {
	u.setTaskPaused(w, r, s, true)
}

func (u *UI) resumeTask(w http.ResponseWriter, r *http.Request, s *session) {
	u.setTaskPaused(w, r, s, false)
}

func (u *UI) setTaskPaused(w http.ResponseWriter, r *http.Request, s *session, pause bool) {
	name := r.PathValue("name")
	verb := "resumed"
	if pause {
		verb = "paused"
	}
	st, err := u.in.SetTaskPaused(r.Context(), name, pause)
	if errors.Is(err, client.ErrTaskNotFound) {
		u.fail(w, r, s, http.StatusNotFound, "No worker has registered a task "+quote(name)+" in this namespace.")
		return
	}
	if err != nil {
		u.failErr(w, r, s, "change the task's state", err)
		return
	}
	outcome := verb
	if st.Changed {
		u.log.Info("taskq: task "+verb+" from the dashboard", "task", name, "session", s.ID, "remote", clientAddr(r))
	} else {
		outcome = "already-" + verb
	}
	http.Redirect(w, r, taskPath(name)+"?done="+outcome, http.StatusSeeOther)
}

// scheduleAction serves the pause, resume and trigger-now forms of the
// schedules page.
func (u *UI) scheduleAction(w http.ResponseWriter, r *http.Request, s *session) {
	name, what := r.PathValue("name"), r.PathValue("action")
	sc := u.opts.Client.Schedules()
	var err error
	outcome := "schedule-" + what
	switch what {
	case "pause", "resume":
		err = sc.SetPaused(r.Context(), name, what == "pause")
	case "trigger":
		var h *client.RunHandle
		h, err = sc.TriggerNow(r.Context(), name)
		var coll *client.IdempotencyCollisionError
		if errors.As(err, &coll) {
			u.failLink(w, r, s, http.StatusConflict, "This tick's key "+quote(coll.Key)+" is held by another run: no run was created.",
				&link{Href: "/ui/runs/" + url.PathEscape(coll.ExistingRunID), Text: "The run that holds it"})
			return
		}
		if err == nil {
			u.log.Info("taskq: schedule triggered from the dashboard", "schedule", name, "run", h.ID(), "session", s.ID, "remote", clientAddr(r))
			http.Redirect(w, r, "/ui/runs/"+url.PathEscape(h.ID())+"?done=schedule-triggered", http.StatusSeeOther)
			return
		}
	default:
		u.fail(w, r, s, http.StatusNotFound, "There is no such page.")
		return
	}
	if errors.Is(err, client.ErrScheduleNotFound) {
		u.fail(w, r, s, http.StatusNotFound, "There is no schedule "+quote(name)+".")
		return
	}
	if err != nil {
		u.failErr(w, r, s, "change the schedule", err)
		return
	}
	u.log.Info("taskq: schedule "+strings.TrimSuffix(what, "e")+"ed from the dashboard", "schedule", name, "session", s.ID, "remote", clientAddr(r))
	http.Redirect(w, r, "/ui/schedules?done="+outcome, http.StatusSeeOther)
}
