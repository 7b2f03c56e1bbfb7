package faulttest_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/redistest"
)

// A worker that logs JSON keeps logging JSON while its Redis is killed and
// restarted: go-redis's own lines (its failed dials) reach the worker's
// logger as warnings with component=go-redis, never stderr as text.
func TestWorkerLogsStayJSONThroughARedisRestart(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, faulttest.TaskConfig{})
	var stderr redistest.LogBuffer
	cfg := faulttest.WorkerConfig{
		RedisURL: cl.srv.URL(), Namespace: cl.ns, Name: "json", Lease: time.Second, Tasks: cl.tasks, LogJSON: true,
	}
	p, err := faulttest.StartWorker(os.Args[0], []string{"-test.run=^$"}, cfg, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	cl.procs.Add(p)
	if _, err := p.WaitLine("ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cl.trigger(ctx, faulttest.TaskPlain, faulttest.Input{Op: "before"}); err != nil {
		t.Fatal(err)
	}
	cl.waitAll(10 * time.Second)

	cl.srv.Kill()
	defer func() {
		if t.Failed() {
			t.Log(stderr.String())
		}
	}()
	eventually(t, 20*time.Second, "the worker to find Redis gone", func() bool {
		return strings.Contains(stderr.String(), "connection refused")
	})
	time.Sleep(time.Second) // go-redis dials again meanwhile, and fails
	cl.srv.Start()
	var id string
	eventually(t, 20*time.Second, "a trigger once Redis is back", func() bool {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		id, err = cl.trigger(tctx, faulttest.TaskPlain, faulttest.Input{Op: "after"})
		return err == nil
	})
	cl.waitAll(20 * time.Second)
	if !p.Stop(20 * time.Second) {
		t.Fatal("the worker did not stop on SIGTERM")
	}

	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	libLines := 0
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("stderr line %d of %d is not JSON: %q", i+1, len(lines), l)
			continue
		}
		if rec["component"] == "go-redis" {
			libLines++
			if rec["level"] != "WARN" || !strings.HasPrefix(rec["msg"].(string), "go-redis: ") || rec["source"] == nil {
				t.Errorf("go-redis line %d: want level WARN, a msg starting \"go-redis: \" and a source: %q", i+1, l)
			}
		}
	}
	if libLines == 0 {
		t.Errorf("no line of go-redis's in the worker's log (run %s):\n%s", id, stderr.String())
	}
	t.Logf("%d lines, %d of them go-redis's", len(lines), libLines)
}
