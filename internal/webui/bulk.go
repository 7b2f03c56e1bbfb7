package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/taskq/taskq/pkg/client"
)

// bulkSelectMax bounds the runs one selection on the runs page names.
const bulkSelectMax = 200

// bulkData is the confirmation and the result page of a bulk cancel or
// retry: of runs selected on the runs page, or of every run matching its
// filter (Inspector.CancelRuns, RetryRuns).
type bulkData struct {
	Action string // "cancel" or "retry"
	// Selected are the runs picked by hand (empty for a filter).
	Selected []string
	// All: every run matching the filter Task, Status, Q.
	All             bool
	Task, Status, Q string
	// Filter says in words what the filter keeps.
	Filter string
	// Matched is how many runs the action applies to (the dry run);
	// Truncated says more may match than were read.
	Matched   int
	Truncated bool
	// Skipped counts selected runs the action does not apply to.
	Skipped int
	// Sample is up to sampleMax of the runs it applies to.
	Sample []*client.RunInfo
	// TooMany: more runs match than one action takes (client.BulkMaxMax).
	TooMany bool
	Max     int
	// Result is what the action did, once confirmed.
	Result *client.BulkResult
	// Back returns to the runs page the action came from.
	Back string
}

const sampleMax = 20

// Verb is the action as a word of a sentence.
func (d *bulkData) Verb() string {
	if d.Action == "retry" {
		return "Retry"
	}
	return "Cancel"
}

// applies reports whether the action can act on r: a cancel on a run not
// ended, a retry on a failed or cancelled run not retried yet, as the
// Inspector's bulk actions choose.
func (d *bulkData) applies(r *client.RunInfo) bool {
	if d.Action == "cancel" {
		return !r.Status.Terminal()
	}
	return (r.Status == client.StatusFailed || r.Status == client.StatusCancelled) && r.RetriedBy == ""
}

// readBulk reads a bulk action's request, from the query (confirmation)
// or the form (action); it answers the problem itself and returns nil on a
// bad request.
func (u *UI) readBulk(w http.ResponseWriter, r *http.Request, s *session, v url.Values) *bulkData {
	d := &bulkData{Action: v.Get("action"), All: v.Get("all") == "1", Task: v.Get("task"), Status: v.Get("status"),
		Q: strings.TrimSpace(v.Get("q")), Max: client.BulkMaxMax}
	if d.Action != "cancel" && d.Action != "retry" {
		u.fail(w, r, s, http.StatusBadRequest, "There is no bulk action "+quote(d.Action)+": cancel or retry.")
		return nil
	}
	if d.Status != "" && !slices.Contains(statuses(), client.Status(d.Status)) {
		u.fail(w, r, s, http.StatusBadRequest, "There is no status "+quote(d.Status)+".")
		return nil
	}
	back := url.Values{}
	for k, val := range map[string]string{"task": d.Task, "status": d.Status, "q": d.Q} {
		if val != "" {
			back.Set(k, val)
		}
	}
	d.Back = "/ui/runs?" + back.Encode()
	if !d.All {
		for _, id := range v["run"] {
			if id = strings.TrimSpace(id); id != "" && !slices.Contains(d.Selected, id) {
				d.Selected = append(d.Selected, id)
			}
		}
		switch {
		case len(d.Selected) == 0:
			u.fail(w, r, s, http.StatusBadRequest, "No run was selected: tick the runs to act on, or choose every run matching the search.")
			return nil
		case len(d.Selected) > bulkSelectMax:
			u.fail(w, r, s, http.StatusBadRequest, fmt.Sprintf("%d runs were selected, more than the %d one action takes: act on every run matching a narrower search instead.", len(d.Selected), bulkSelectMax))
			return nil
		}
	}
	return d
}

// filter is the runs page's filter as the Inspector takes it, and whether
// it can match nothing.
func (d *bulkData) filter() (client.ListOptions, bool) {
	o := client.ListOptions{Task: d.Task, Status: client.Status(d.Status)}
	var parts []string
	if d.Task != "" {
		parts = append(parts, "task is "+quote(d.Task))
	}
	if d.Status != "" {
		parts = append(parts, "status is "+d.Status)
	}
	none := false
	if d.Q != "" {
		f := parseSearch(d.Q)
		o.Key, o.Where, none = f.Key, f.Where, f.None
		parts = append(parts, f.Describe)
	}
	d.Filter = strings.Join(parts, " and ")
	return o, none
}

// bulkConfirm is the confirmation page: how many runs the action applies
// to, found by a dry run, and a sample of them.
func (u *UI) bulkConfirm(w http.ResponseWriter, r *http.Request, s *session) {
	d := u.readBulk(w, r, s, r.URL.Query())
	if d == nil {
		return
	}
	ctx := r.Context()
	if d.All {
		o, none := d.filter()
		if !none {
			act := u.in.CancelRuns
			if d.Action == "retry" {
				act = u.in.RetryRuns
			}
			res, err := act(ctx, client.BulkOptions{Filter: o, DryRun: true})
			if err != nil {
				u.failErr(w, r, s, "count the runs", err)
				return
			}
			d.Matched, d.Truncated = res.Matched, res.Truncated
			d.TooMany = res.Truncated || res.Matched > d.Max
			o.Limit = client.ListLimitMax
			if d.Matched > 0 {
				page, err := u.in.ListRuns(ctx, o)
				if err != nil {
					u.failErr(w, r, s, "list the runs", err)
					return
				}
				for _, run := range page.Items {
					if len(d.Sample) < sampleMax && d.applies(run) {
						d.Sample = append(d.Sample, run)
					}
				}
			}
		}
	} else {
		for _, id := range d.Selected {
			run, err := u.in.GetRun(ctx, id)
			switch {
			case errors.Is(err, client.ErrRunNotFound):
				d.Skipped++
				continue
			case err != nil:
				u.failErr(w, r, s, "read the runs", err)
				return
			}
			if !d.applies(run) {
				d.Skipped++
				continue
			}
			d.Matched++
			if len(d.Sample) < sampleMax {
				d.Sample = append(d.Sample, run)
			}
		}
	}
	u.render(w, r, s, http.StatusOK, "bulk", &view{Title: d.Verb() + " runs", Nav: "runs", Data: d})
}

// bulkAct does a confirmed bulk action and shows what it did to each run.
func (u *UI) bulkAct(w http.ResponseWriter, r *http.Request, s *session) {
	d := u.readBulk(w, r, s, r.PostForm)
	if d == nil {
		return
	}
	ctx := r.Context()
	if d.All {
		o, none := d.filter()
		res := &client.BulkResult{Runs: []client.BulkRun{}}
		if !none {
			act := u.in.CancelRuns
			if d.Action == "retry" {
				act = u.in.RetryRuns
			}
			var err error
			res, err = act(ctx, client.BulkOptions{Filter: o, Max: d.Max})
			if errors.Is(err, client.ErrTooManyRuns) {
				u.failLink(w, r, s, http.StatusConflict, "Nothing was done: "+err.Error()+".", &link{Href: d.Back, Text: "Back to the runs"})
				return
			}
			if err != nil {
				u.failErr(w, r, s, strings.ToLower(d.Verb())+" the runs", err)
				return
			}
		}
		d.Result = res
	} else {
		res := &client.BulkResult{Runs: []client.BulkRun{}}
		for _, id := range d.Selected {
			br := client.BulkRun{RunID: id}
			run, err := u.in.GetRun(ctx, id)
			switch {
			case err != nil:
				br.Err = err
			case !d.applies(run) && d.Action == "cancel":
				br.Status, br.Err = run.Status, fmt.Errorf("it had already ended: %s", run.Status)
			case !d.applies(run):
				br.Status, br.Err = run.Status, fmt.Errorf("it is %s%s: only a failed or cancelled run not retried yet is retried", run.Status,
					map[bool]string{true: ", retried already", false: ""}[run.RetriedBy != ""])
			case d.Action == "cancel":
				br.Status, br.Err = u.opts.Client.Handle(id).Cancel(ctx)
				if br.Err == nil && br.Status != client.StatusCancelled {
					br.Err = fmt.Errorf("it had already ended: %s", br.Status)
				}
			default:
				var h *client.RunHandle
				if h, br.Err = u.in.RetryRun(ctx, id); br.Err == nil {
					br.RetryRunID = h.ID()
				}
			}
			var ue *client.UnavailableError
			if errors.As(br.Err, &ue) {
				u.failErr(w, r, s, strings.ToLower(d.Verb())+" the runs", br.Err)
				return
			}
			res.Matched++
			if br.Err == nil {
				res.Done++
			} else {
				br.Error = br.Err.Error()
			}
			res.Runs = append(res.Runs, br)
		}
		d.Result = res
	}
	u.log.Info("taskq: bulk "+d.Action+" from the dashboard", "selected", len(d.Selected), "filter", d.Filter,
		"matched", d.Result.Matched, "done", d.Result.Done, "session", s.ID, "remote", clientAddr(r))
	u.render(w, r, s, http.StatusOK, "bulk", &view{Title: d.Verb() + " runs", Nav: "runs", Data: d})
}

// bulkURL is the confirmation page of action on every run matching the
// runs page's filter.
func bulkURL(action, task, status, q string) string {
	v := url.Values{"action": {action}, "all": {"1"}}
	for k, val := range map[string]string{"task": task, "status": status, "q": q} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return "/ui/runs/bulk?" + v.Encode()
}
