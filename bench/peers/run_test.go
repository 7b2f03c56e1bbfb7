package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRunPrintsTheTable runs the whole benchmark, small, on a private
// redis-server: every round of both systems must pass its checks (every
// trigger accepted, every duplicate rejected, every run succeeded once)
// and the report must hold the table and every round's figures.
func TestRunPrintsTheTable(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("the benchmark starts its own redis-server, which is not on PATH: %v", err)
	}
	cfg, err := parseFlags([]string{"-n", "200", "-warmup", "-1", "-callers", "8", "-slots", "8"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := run(ctx, cfg, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"| figure | asynq | taskq | ratio |",
		"| trigger | ",
		"| duplicate rejection | ",
		"| end to end (no-op handler, 8 slots) | ",
		"| redis-server CPU per trigger | ",
		"| trigger | 3 | ",
		"| end to end (no-op handler, 8 slots) | 3 | ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
