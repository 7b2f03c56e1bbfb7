package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type wIn struct{ ID string }

// workers ls shows a live worker (its name escaped) with the run it holds,
// and a dead worker's run as lapsed, awaiting redelivery.
func TestWorkersLs(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		cli := newCLI(t, b)
		if r := cli.run("workers", "ls"); r.code != 0 || !strings.Contains(r.stdout, "No workers") {
			t.Fatalf("empty namespace: %+v", r)
		}

		tk := task.Must[wIn, wIn]("held", task.Options{})
		started, release := make(chan string, 1), make(chan struct{})
		defer close(release)
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "live\x1b[31m", Version: "v7",
			Logger: quiet, FetchBlock: 100 * time.Millisecond, LeaseDuration: 2 * time.Second, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		worker.Handle(w, tk, func(ctx worker.Context, x wIn) (wIn, error) {
			started <- ctx.RunID()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return x, nil
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Shutdown(ctx) }()
		ref, err := client.RunNoWait(ctx, c, tk, wIn{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		<-started

		// A worker that stopped beating 10s ago (1s interval) while it
		// held a run of "orphan", a task no live worker handles.
		st := redisstore.StoreOf(clientlink.Store(c))
		rec := engine.WorkerRecord{Name: "gone", Host: "h", PID: 1, Tasks: []string{"orphan"},
			Concurrency: 1, Started: time.Now().Add(-time.Minute), HeartbeatInterval: time.Second, LeaseDuration: 3 * time.Second}
		if err := st.BeatWorker(ctx, rec, time.Now().Add(-10*time.Second), 0); err != nil {
			t.Fatal(err)
		}
		orphanTask := task.Must[wIn, wIn]("orphan", task.Options{})
		orphan, err := client.RunNoWait(ctx, c, orphanTask, wIn{ID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.EnsureGroup(ctx, "orphan"); err != nil {
			t.Fatal(err)
		}
		parts, err := st.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		part, _ := parts.OfRun(orphan.ID())
		ds, err := st.ReadGroup(ctx, part, "gone", []string{"orphan"}, 10, -1)
		if err != nil || len(ds) != 1 || ds[0].RunID != orphan.ID() {
			t.Fatalf("gone's delivery = %v, %v; want %s", ds, err, orphan.ID())
		}

		r := cli.run("workers", "ls")
		if r.code != 0 {
			t.Fatalf("workers ls: %+v", r)
		}
		// The run column is as wide as the longest ID, which names its
		// partition when it is not the first.
		for _, want := range []string{regexp.QuoteMeta(`live\x1b[31m`), "v7", regexp.QuoteMeta(ref.ID()) + " +held",
			regexp.QuoteMeta(orphan.ID()) + " +orphan  gone", "lapsed, awaiting redelivery", "dead"} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("table lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "\x1b") {
			t.Errorf("a control character reached the table:\n%q", r.stdout)
		}

		r = cli.run("workers", "ls", "-o", "json")
		var out wire.Workers
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
			t.Fatalf("json: %v %+v", err, r)
		}
		if len(out.Workers) != 2 || out.Workers[0].Name != "live\x1b[31m" || out.Workers[0].Status != "live" ||
			len(out.Workers[0].Runs) != 1 || out.Workers[0].Runs[0].RunID != ref.ID() ||
			out.Workers[1].Status != "dead" || len(out.Lapsed) != 1 || out.Lapsed[0].RunID != orphan.ID() {
			t.Errorf("json: %s", r.stdout)
		}
	})
}
