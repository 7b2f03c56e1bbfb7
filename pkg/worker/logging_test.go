package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A run that ends failed is logged at WARN with its run ID, task and
// error; an attempt that will be retried is not.
func TestFailedRunIsLoggedAtWarn(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	var logs lockedBuilder
	tk := task.Must[in, out]("doomed", task.Options{Retries: 1, Backoff: task.Backoff{Initial: 1, Factor: 1}})
	startWorker(t, b, worker.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			return out{}, errors.New("card declined")
		})
	})
	ref, err := client.RunNoWait(ctx, c, tk, in{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if info := wait(t, ref); info.Status != client.StatusFailed {
		t.Fatalf("status = %s", info.Status)
	}
	var warns []map[string]any
	eventually(t, "the failure logged", func() bool {
		warns = warns[:0]
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["level"] == "WARN" {
				warns = append(warns, rec)
			}
		}
		return len(warns) > 0
	})
	if len(warns) != 1 {
		t.Fatalf("WARN records = %v, want one (the retried attempt is not a warning)", warns)
	}
	w := warns[0]
	if w["run"] != ref.ID() || w["task"] != "doomed" || w["err"] != "card declined" {
		t.Errorf("WARN record = %v, want run %s, task doomed, err card declined", w, ref.ID())
	}
}
