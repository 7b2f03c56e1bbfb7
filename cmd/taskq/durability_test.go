package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/task"
)

// runs trigger --replicas waits for that many replicas: with one attached
// the run is reported acknowledged; with it stopped the run is written,
// printed, and the command exits 7; a level that is not valid is a usage
// error.
func TestRunsTriggerAsksForReplicas(t *testing.T) {
	t.Parallel()
	m := redistest.StartServer(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.StartReplica(t, m)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := &redistest.Backend{Name: "redis", Client: rdb, Namespace: redistest.Namespace(t), URL: m.URL()}
	c := newTestClient(t, b)
	spec := task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000,
		BackoffInitialMs: 1000, BackoffFactor: 2, MaxDeliveries: 11}
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
	if _, err := clientlink.Store(c).RegisterTask(context.Background(), "ship", raw, true); err != nil {
		t.Fatal(err)
	}
	cl := newCLI(t, b)

	r := cl.run("runs", "trigger", "ship", "--input", `{"id":"1"}`, "--replicas", "1", "--replicas-timeout", "3s", "-o", "json")
	var ok wire.TriggerResult
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ok) != nil || ok.Durability == nil || !ok.Durability.Reached || ok.Durability.Replicas != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cl.run("runs", "trigger", "ship", "--input", `{"id":"2"}`, "--replicas", "1", "--replicas-timeout", "3s")
	if r.code != 0 || !strings.Contains(r.stdout, "1 of 1 replica(s) acknowledged it") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	pid := replica.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	r = cl.run("runs", "trigger", "ship", "--input", `{"id":"3"}`, "--replicas", "1", "--replicas-timeout", "50ms", "-o", "json")
	var short wire.Error
	if r.code != exitNotDurable || json.Unmarshal([]byte(r.stdout), &short) != nil || short.Code != wire.CodeDurabilityNotReached || short.RunID == "" {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, exitNotDurable, r.stdout, r.stderr)
	}
	if _, err := c.Handle(short.RunID).Get(context.Background()); err != nil {
		t.Fatalf("the run the output names: %v", err)
	}
	r = cl.run("runs", "trigger", "ship", "--input", `{"id":"4"}`, "--replicas", "1", "--replicas-timeout", "50ms")
	if r.code != exitNotDurable || !strings.Contains(r.stderr, "will run unless a failover loses it") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if r = cl.run("runs", "trigger", "ship", "--replicas", "-1"); r.code != exitUsage {
		t.Fatalf("--replicas -1: exit %d\n%s", r.code, r.stderr)
	}
}
