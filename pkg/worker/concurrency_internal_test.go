package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// The reason a run cancelled by its group records (and its cancel notice
// carries) reads back as the typed cause, through the cancel notice and
// through a heartbeat that finds the run ended; other reasons do not.
func TestConcurrencyCauseFromItsReason(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		reason string
		want   *client.RunError
	}{
		{cancelreason.Displaced("r2", `acme "eu" | x`), &client.RunError{RunID: "r1", Status: client.StatusCancelled,
			Message: cancelreason.Displaced("r2", `acme "eu" | x`), Group: `acme "eu" | x`, By: "r2"}},
		{cancelreason.FullGroup("acme", 2, 2), &client.RunError{RunID: "r1", Status: client.StatusCancelled,
			Message: cancelreason.FullGroup("acme", 2, 2), Group: "acme"}},
		{"no longer wanted", nil},
		{cancelreason.Superseded("r9"), nil},
		{"displaced by run r2 somewhere", nil},
	} {
		err, ok := concurrencyCause("r1", c.reason)
		if c.want == nil {
			if ok {
				t.Errorf("%q gave %v", c.reason, err)
			}
			continue
		}
		var ce *client.RunError
		if !ok || !(errors.As(err, &ce) && ce.Group != "") || *ce != *c.want || !errors.Is(err, task.ErrConcurrencyCancelled) || !errors.Is(err, task.ErrRunCancelled) {
			t.Errorf("%q gave %v, %v; want %+v", c.reason, err, ok, c.want)
		}
		if got := endedCause("r1", c.reason); !(errors.As(got, &ce) && ce.Group != "") || *ce != *c.want {
			t.Errorf("endedCause(%q) = %v", c.reason, got)
		}
	}

	active := newActiveRuns()
	_, ctx := testRun(active, "r1", true, time.Now().Add(time.Minute))
	cn := &canceller{active: active}
	cn.notice("r1|" + cancelreason.Displaced("r2", "acme"))
	var ce *client.RunError
	if cause := context.Cause(ctx); !(errors.As(cause, &ce) && ce.Group != "") || ce.By != "r2" || ce.Group != "acme" {
		t.Fatalf("notice cause = %v", cause)
	}
	_, ctx = testRun(active, "r3", true, time.Now().Add(time.Minute))
	cn.notice("r3|r4")
	var se *client.RunError
	if cause := context.Cause(ctx); !(errors.As(cause, &se) && se.Group == "") || se.By != "r4" {
		t.Fatalf("a superseded run's notice gave %v", cause)
	}
}
