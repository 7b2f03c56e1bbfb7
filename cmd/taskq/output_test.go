package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
)

func TestClean(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"order:1001":         "order:1001",
		`a\b "q" é 👍`:        `a\b "q" é 👍`,
		"\x1b[2J":            `\x1b[2J`,
		"a\r\nb\tc":          `a\r\nb\tc`,
		"x\u202eevil":        `x\u202eevil`, // right-to-left override
		"nb\u00a0sp\u200bzw": `nb\u00a0sp\u200bzw`,
		"bad\xffbyte":        `bad\xffbyte`,
		"del\x7f c1\u009b":   `del\x7f c1\u009b`,
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cleanLines("{\n\t\"k\": \"\x1b[31m\"\n}"); got != "{\n\t\"k\": \"\\x1b[31m\"\n}" {
		t.Errorf("cleanLines kept or lost the wrong characters: %q", got)
	}
}

// A key is the run's input put through an expression: anyone who can
// trigger a run chooses it. In a table it must not clear the screen, move
// the cursor or start a line that looks like a row of its own; JSON output
// stays exact.
func TestHumanOutputEscapesKeys(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		const fake = "lease:forged  0000-fake-run  lease  status  succeeded  1h"
		id := "x\x1b[2J\r\n" + fake
		key := "lease:" + id
		run := triggerLease(t, c, id)
		controls := []string{"\x1b[2J", "\r", "\x1b"}

		for _, args := range [][]string{{"keys", "ls"}, {"runs", "ls"}, {"keys", "get", key}, {"runs", "get", run}} {
			r := cl.run(args...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
			}
			for _, c := range controls {
				if strings.Contains(r.stdout, c) {
					t.Errorf("%v prints %q raw:\n%q", args, c, r.stdout)
				}
			}
			for _, line := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(line, "lease:forged") {
					t.Errorf("%v: the key started a line of its own:\n%s", args, r.stdout)
				}
			}
			if !strings.Contains(r.stdout, `lease:x\x1b[2J\r\n`+fake) {
				t.Errorf("%v does not show the key escaped:\n%s", args, r.stdout)
			}
		}
		rows := strings.Split(strings.TrimSpace(cl.run("keys", "ls").stdout), "\n")
		if len(rows) != 2 {
			t.Errorf("keys ls: %d lines, want the header and one row:\n%s", len(rows), strings.Join(rows, "\n"))
		}

		r := cl.run("keys", "ls", "-o", "json")
		var listed []struct{ Key string }
		if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || listed[0].Key != key {
			t.Fatalf("keys ls -o json = %v, %v; want the exact key %q", listed, err, key)
		}
		// An error quoting the key escapes it too.
		r = cl.run("keys", "get", "lease:\x1b[2J-missing")
		if r.code == 0 || strings.Contains(r.stderr, "\x1b[2J") || !strings.Contains(r.stderr, `\x1b[2J`) {
			t.Errorf("keys get of a missing key: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func TestEvalPrintsAKeyThatDoesNotPrintEscaped(t *testing.T) {
	t.Parallel()
	input := `{"id":"a\u001b[2J\r\nb"}`
	r := runWith(context.Background(), invocation{}, "eval", "input.id", "--input", input)
	if r.code != 0 || r.stdout != `a\x1b[2J\r\nb`+"\n" {
		t.Fatalf("eval: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runWith(context.Background(), invocation{}, "eval", "input.id", "--input", input, "-o", "json")
	var v struct{ Key string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Key != "a\x1b[2J\r\nb" {
		t.Fatalf("eval -o json: %q, %v; want the exact key", r.stdout, err)
	}
}

// Colours are added after escaping: the status column is coloured, a key
// is not, on a terminal.
func TestTableColoursOnlyTheStatus(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := &printer{w: &out, format: formatTable, color: true}
	if err := p.Table([]string{"KEY", "STATUS"}, [][]string{{"k\x1b[31m", "queued"}}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, ansiBlue+"queued"+ansiReset) || !strings.Contains(got, `k\x1b[31m`) || strings.Count(got, "\x1b") != 2 {
		t.Errorf("table = %q", got)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis://:s3cret@127.0.0.1:6379/0": "redis://:xxxxx@127.0.0.1:6379/0",
		"redis://user:s3cret@host:6379/0":  "redis://user:xxxxx@host:6379/0",
		"redis://host:6379/0":              "redis://host:6379/0",
		"redis://user@host/0":              "redis://user@host/0",
		// Malformed: net/url gives up, the password is still found.
		"redis://:s3cret@[::1/0":     "redis://:xxxxx@[::1/0",
		"redis://:s3c%zzret@host/0":  "redis://:xxxxx@host/0",
		"redis:// :s3cret@host/0":    "redis:// :xxxxx@host/0",
		"redis://:s3cret@ho st/0":    "redis://:xxxxx@ho st/0",
		"redis://:pa/ss@wo@rd@host/": "redis://:xxxxx@host/",
		"not a url at all":           "not a url at all",
	} {
		if got := redactURL(raw); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Every message that includes the Redis URL hides its password: the
// errors of a URL that does not parse, of one that parses but is refused,
// and of a server that does not answer.
func TestRedisURLPasswordIsHidden(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"redis://:s3cret@[::1/0",                // net/url: missing ']'
		"redis://:s3c%zzret@host/0",             // net/url: invalid escape
		"redis:// :s3cret@host/0",               // net/url: invalid userinfo
		"redis://:s3cret@ho st/0",               // net/url: invalid host
		"redis://user:s3cret@host:6379/x",       // go-redis: invalid database
		"http://:s3cret@host/0",                 // go-redis: invalid scheme
		"redis://:s3cret@127.0.0.1:99999/0",     // dial fails
		"redis://:s3\"cret@127.0.0.1:1/0?x=1",   // quoted with an escape
		"redis://:s3cret@host/0?dial_timeout=x", // go-redis: invalid option
	} {
		r := runWith(context.Background(), invocation{}, "--redis", u, "keys", "ls")
		if r.code == 0 || !strings.Contains(r.stderr, "xxxxx") || strings.Contains(r.stderr, "s3") {
			t.Errorf("--redis %s: exit %d, stderr %q; want the password hidden", u, r.code, r.stderr)
		}
	}
}

func TestLogsHideTheRedisPassword(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := &app{redisURL: "redis://:s3cret@host:6379/0"}
	log := slog.New(slog.NewTextHandler(&buf, a.logOptions(slog.LevelInfo)))
	log.Warn("cannot reach redis://:s3cret@host:6379/0", "url", a.redisURL,
		"err", fmt.Errorf("dial %q: %w", a.redisURL, errors.New("refused")))
	if got := buf.String(); strings.Contains(got, "s3cret") || strings.Count(got, "xxxxx") != 3 {
		t.Errorf("log = %q", got)
	}
}

func TestDevTryItHidesThePassword(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &app{redisURL: "redis://:s3cret@10.0.0.5:6379/0", namespace: "default"}
	a.printTryIt(&out, "", "", "s1", false, "")
	if got := out.String(); strings.Contains(got, "s3cret") || !strings.Contains(got, "redis://:xxxxx@10.0.0.5:6379/0") ||
		!strings.Contains(got, "in place of xxxxx") {
		t.Errorf("try-it text = %q", got)
	}
}

// Under go run (as here: a test binary is built in a go-build directory),
// the printed commands use a built CLI, since go run would turn every exit
// code into 1 and hide a duplicate's 4.
func TestDevTryItUsesABuiltCLI(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &app{redisURL: "redis://127.0.0.1:6379/0", namespace: "default"}
	a.printTryIt(&out, "", "", "s1", true, "")
	got := out.String()
	if !strings.Contains(got, "go build -o bin/taskq ./cmd/taskq") || !strings.Contains(got, "  bin/taskq runs trigger ") ||
		strings.Contains(got, "go run ./cmd/taskq runs") {
		t.Errorf("try-it text = %q", got)
	}
}
