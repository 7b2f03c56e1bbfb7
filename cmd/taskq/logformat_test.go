package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// taskq dev --log-format json logs one JSON object a line on stderr (the
// worker's start and stop among them); an unknown format is a usage error.
func TestDevLogFormatJSON(t *testing.T) {
	p := startProcess(t, "dev", "--demo", "--delay", "50ms", "--log-format", "json")
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	var msgs []string
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
		msg, _ := rec["msg"].(string)
		msgs = append(msgs, msg)
	}
	if all := strings.Join(msgs, "|"); !strings.Contains(all, "taskq worker started") || !strings.Contains(all, "taskq worker stopped") {
		t.Errorf("log messages %v lack the worker's start and stop", msgs)
	}
}

func TestLogFormatUsageError(t *testing.T) {
	for _, args := range [][]string{{"dev", "--demo"}, {"serve", "--insecure", "--addr", "127.0.0.1:0"}} {
		r := runWith(context.Background(), invocation{}, append(append([]string{"--redis", "redis://127.0.0.1:1/0"}, args...), "--log-format", "xml")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `invalid --log-format "xml": use text or json`) {
			t.Errorf("%s --log-format xml: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
}
