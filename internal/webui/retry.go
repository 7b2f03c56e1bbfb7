package webui

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/taskq/taskq/internal/runview"
	"github.com/taskq/taskq/pkg/client"
)

// retryData is the retry confirmation page.
type retryData struct {
	Run *client.RunInfo
	// Holder is the run that holds the run's key now, when another run
	// does: the retry would be refused.
	Holder string
}

func (u *UI) confirmRetry(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	run := u.pathRun(w, r, s)
	if run == nil {
		return
	}
	d := &retryData{Run: run}
	if runview.Retryable(run) && run.IdempotencyKey != "" {
		k, err := u.in.GetKey(ctx, run.IdempotencyKey)
		var nh *client.StateError
		switch {
		case errors.As(err, &nh) && errors.Is(nh.Kind, client.ErrKeyNotHeld):
		case err != nil:
			u.failErr(w, r, s, "read the run's key", err)
			return
		default:
			d.Holder = k.OwnerRunID
		}
	}
	u.render(w, r, s, http.StatusOK, "retry", &view{Title: "Retry run " + run.ID, Nav: "runs", Data: d})
}

// retry triggers a failed or cancelled run again and goes to the new run.
func (u *UI) retry(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	h, err := u.in.RetryRun(r.Context(), id)
	var (
		nr   *client.StateError
		coll *client.IdempotencyCollisionError
	)
	switch {
	case errors.Is(err, client.ErrRunNotFound):
		u.fail(w, r, s, http.StatusNotFound, "There is no run "+quote(id)+".")
		return
	case errors.As(err, &nr) && errors.Is(nr.Kind, client.ErrNotRetryable):
		msg := "Run " + id + " cannot be retried: "
		switch {
		case nr.RetriedBy != "":
			u.failLink(w, r, s, http.StatusConflict, msg+"it was already retried by run "+nr.RetriedBy+". Retry that run instead.",
				&link{Href: "/ui/runs/" + url.PathEscape(nr.RetriedBy), Text: "Open run " + nr.RetriedBy + ", its retry"})
		default:
			u.failLink(w, r, s, http.StatusConflict, msg+"it is "+string(nr.Status)+", and only a failed or cancelled run can be retried. Nothing was created.",
				&link{Href: "/ui/runs/" + url.PathEscape(id), Text: "Back to the run"})
		}
		return
	case errors.As(err, &coll) && coll.ExistingRunID == id:
		u.failLink(w, r, s, http.StatusConflict, "Run "+id+" was not retried: it still holds its idempotency key "+quote(coll.Key)+
			" (its task's strategy keeps the key after the run ended), so the retry would be a duplicate of it. Nothing was created; release the key first to retry.",
			&link{Href: "/ui/keys/release?" + url.Values{"key": {coll.Key}, "owner": {id}}.Encode(), Text: "Release the key…"})
		return
	case errors.As(err, &coll):
		u.failLink(w, r, s, http.StatusConflict, "Run "+id+" was not retried: its idempotency key "+quote(coll.Key)+
			" is held by run "+coll.ExistingRunID+", so the retry would be a duplicate. Nothing was created; the key is freed when that run ends (or by releasing it).",
			&link{Href: "/ui/runs/" + url.PathEscape(coll.ExistingRunID), Text: "Open run " + coll.ExistingRunID + ", which holds the key"})
		return
	case errors.Is(err, client.ErrTaskNotFound):
		u.fail(w, r, s, http.StatusNotFound, "Run "+id+" was not retried: its task is not registered in this namespace (no worker has handled it): start a worker that handles it.")
		return
	case err != nil && h == nil:
		u.failErr(w, r, s, "retry the run", err)
		return
	case err != nil:
		// Created, but the link between the two runs could not be written.
		u.log.Warn("taskq: run retried from the dashboard, not linked", "run", id, "retry", h.ID(), "session", s.ID, "err", err)
		u.failLink(w, r, s, http.StatusInternalServerError, err.Error(),
			&link{Href: "/ui/runs/" + url.PathEscape(h.ID()), Text: "Open run " + h.ID() + ", the retry"})
		return
	}
	outcome := "retried"
	if o := h.TriggerInfo().Outcome; o != client.OutcomeCreated && o != "" {
		outcome = "retry-debounced"
	}
	u.log.Info("taskq: run retried from the dashboard", "run", id, "retry", h.ID(), "outcome", h.TriggerInfo().Outcome, "session", s.ID, "remote", clientAddr(r))
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(h.ID())+"?done="+outcome, http.StatusSeeOther)
}
