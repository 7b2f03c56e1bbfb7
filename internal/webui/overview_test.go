package webui

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

func TestTheOverviewCountsByTaskStatusAndTheLastHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &stepClock{now: time.Now()}
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{Clock: clock}})
	e.trigger(ctx, order{ID: "ov-1"})
	gone := e.trigger(ctx, order{ID: "ov-2"})
	e.trigger(ctx, order{ID: "ov-3"})
	if _, err := e.c.Handle(gone).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(testToken)
	row := func() string {
		p := b.get("/ui/?fragment=1")
		i := strings.Index(p.body, ">ui-order</a>")
		if p.status != http.StatusOK || i < 0 {
			t.Fatalf("the overview: %d without the order task:\n%s", p.status, p.body)
		}
		end := strings.Index(p.body[i:], "</tr>")
		return cells.ReplaceAllString(p.body[i:i+end], "|")
	}
	// queued 2, running 0, waiting 0, succeeded 0, failed 0, cancelled 1;
	// created in the last hour 3; failure rate 0 of 1 ended.
	if got, want := row(), "|2|0|0|0|0|1|3|0.0%|"; !strings.Contains(got, want) {
		t.Errorf("the order task's row reads %q, want %q", got, want)
	}
	clock.Add(2 * time.Hour)
	if got, want := row(), "|2|0|0|0|0|1|0|-|"; !strings.Contains(got, want) {
		t.Errorf("two hours later the order task's row reads %q, want %q", got, want)
	}
}

// cells turns a table row's markup into its cells' text, "|" between them.
var cells = regexp.MustCompile(`(?s)\s*(<[^>]*>\s*)+`)

// The overview's queue table counts each task's queued and scheduled runs
// and says how long the oldest queued run has waited; the task's page
// shows the same row.
func TestTheOverviewShowsQueueCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.trigger(ctx, order{ID: "q-1"})
	e.trigger(ctx, order{ID: "q-2"})
	e.trigger(ctx, order{ID: "q-3"}, client.RunIn(time.Hour))
	b := e.browser()
	b.signIn(testToken)
	for _, path := range []string{"/ui/?fragment=1", "/ui/tasks/ui-order?fragment=1"} {
		p := b.get(path)
		i := strings.Index(p.body, `id="queues"`)
		if p.status != http.StatusOK || i < 0 {
			t.Fatalf("%s: %d without the queue table:\n%s", path, p.status, p.body)
		}
		j := strings.Index(p.body[i:], ">ui-order</a>")
		if j < 0 {
			t.Fatalf("%s: no queue row of the order task:\n%s", path, p.body[i:])
		}
		end := strings.Index(p.body[i+j:], "</tr>")
		// queued 2, its oldest waiting, running 0, scheduled 1, rate
		// limited 0, concurrency 0, retrying 0
		row := cells.ReplaceAllString(p.body[i+j:i+j+end], "|")
		if !regexp.MustCompile(`^>ui-order\|2\|[^|-][^|]* ago\|0\|1\|0\|0\|0\|$`).MatchString(row) {
			t.Errorf("%s: the order task's queue row reads %q", path, row)
		}
		if !strings.Contains(p.body, `<svg class="chart"`) {
			t.Errorf("%s: no chart", path)
		}
	}
}
