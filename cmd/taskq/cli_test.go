package main

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

type leaseIn struct {
	ID string `json:"id"`
}

// leaseTask holds its key while the run is active; nothing runs it here,
// so its runs stay queued and keep their keys.
var leaseTask = task.Must[leaseIn, struct{}]("lease", task.Options{
	Idempotency: task.Status(`"lease:" + input.id`, time.Hour),
})

func triggerLease(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	ref, err := client.RunNoWait(context.Background(), c, leaseTask, leaseIn{ID: id})
	if err != nil {
		t.Fatalf("trigger lease %s: %v", id, err)
	}
	return ref.ID()
}

// handOver frees key from its owner and lets a new run claim it: what
// happens when the owner finishes (or its key expires) and a duplicate
// arrives.
func handOver(t *testing.T, c *client.Client, key, from, id string) string {
	t.Helper()
	ok, err := redisstore.StoreOf(clientlink.Store(c)).ReleaseKey(context.Background(), key, from)
	if err != nil || !ok {
		t.Fatalf("release %s from %s: %v %v", key, from, ok, err)
	}
	return triggerLease(t, c, id)
}

func owner(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	ks, ok, err := redisstore.StoreOf(clientlink.Store(c)).GetKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return ks.Owner
}

// keys release is a compare-and-delete on the owner the operator saw: a
// key that changed owner after it was listed, or while the confirmation
// question was open, is left alone, and the command exits with code 5.
func TestKeysReleaseRefusesWhenTheOwnerChanged(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)

		t.Run("after it was listed", func(t *testing.T) {
			first := triggerLease(t, c, "1")
			r := cl.run("keys", "ls", "-o", "json")
			var listed []struct {
				Key   string `json:"key"`
				RunID string `json:"runId"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || r.code != 0 {
				t.Fatalf("keys ls: exit %d, %v\n%s", r.code, err, r.stdout)
			}
			if len(listed) != 1 || listed[0].Key != "lease:1" || listed[0].RunID != first {
				t.Fatalf("keys ls = %+v, want lease:1 held by %s", listed, first)
			}
			second := handOver(t, c, "lease:1", first, "1")

			r = cl.run("keys", "release", "lease:1", "--owner", listed[0].RunID, "--yes")
			if r.code != exitChanged {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitChanged, r.stderr)
			}
			if !strings.Contains(r.stderr, "now held by run "+second) || !strings.Contains(r.stderr, "not by run "+first) ||
				!strings.Contains(r.stderr, "nothing released") {
				t.Errorf("stderr does not name both owners: %q", r.stderr)
			}
			if got := owner(t, c, "lease:1"); got != second {
				t.Fatalf("lease:1 is held by %q after the refused release, want %s", got, second)
			}
		})

		t.Run("while the question was open", func(t *testing.T) {
			first := triggerLease(t, c, "2")
			stdin, answer := io.Pipe()
			stderr := &redistest.LogBuffer{}
			done := make(chan result, 1)
			go func() {
				done <- runWith(context.Background(), invocation{stdin: stdin, stderr: stderr}, cl.args([]string{"keys", "release", "lease:2"})...)
			}()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), "Release it?") {
				if time.Now().After(deadline) {
					t.Fatalf("no confirmation question; stderr: %q", stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if !strings.Contains(stderr.String(), "held by run "+first) {
				t.Fatalf("the question does not show the owner %s: %q", first, stderr.String())
			}
			second := handOver(t, c, "lease:2", first, "2")
			if _, err := io.WriteString(answer, "y\n"); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.code != exitChanged {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitChanged, r.stderr)
			}
			if !strings.Contains(r.stderr, "now held by run "+second) {
				t.Errorf("stderr does not name the new owner: %q", r.stderr)
			}
			if got := owner(t, c, "lease:2"); got != second {
				t.Fatalf("lease:2 is held by %q after the refused release, want %s", got, second)
			}
		})

		t.Run("freed meanwhile", func(t *testing.T) {
			first := triggerLease(t, c, "3")
			if _, err := redisstore.StoreOf(clientlink.Store(c)).ReleaseKey(context.Background(), "lease:3", first); err != nil {
				t.Fatal(err)
			}
			r := cl.run("keys", "release", "lease:3", "--owner", first, "--yes")
			if r.code != exitChanged || !strings.Contains(r.stderr, "no longer held by run "+first) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying the key was freed", r.code, r.stderr, exitChanged)
			}
		})

		t.Run("unchanged owner is released", func(t *testing.T) {
			first := triggerLease(t, c, "4")
			r := cl.run("keys", "release", "lease:4", "--owner", first, "--yes")
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := owner(t, c, "lease:4"); got != "" {
				t.Fatalf("lease:4 still held by %s", got)
			}
			// The next trigger of the key is accepted.
			triggerLease(t, c, "4")
		})
	})
}

// Bad flags and arguments are usage errors: exit code 2, a message that
// names the problem, a pointer to --help, and nothing done. The Redis URL
// points nowhere, so a command that tried to connect would fail with 1.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	const nowhere = "redis://127.0.0.1:1/0"
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "taskq"`},
		{[]string{"runs", "frob"}, `unknown command "frob" for "taskq runs"`},
		{[]string{"keys", "lss"}, `did you mean "ls"?`},
		{[]string{"keys", "ls", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"keys", "ls", "--limit", "3"}, "unknown flag: --limit"},
		{[]string{"-o", "yaml", "keys", "ls"}, `invalid output format "yaml" for -o/--output: use table or json`},
		{[]string{"--namespace", "", "keys", "ls"}, "--namespace must not be empty"},
		{[]string{"--redis", "http://127.0.0.1:6379", "keys", "ls"}, "--redis http://127.0.0.1:6379"},
		{[]string{"runs", "get"}, "taskq runs get: missing argument ID"},
		{[]string{"runs", "get", "a", "b"}, `taskq runs get: unexpected argument "b"`},
		{[]string{"keys", "release"}, "taskq keys release: missing argument KEY"},
		{[]string{"keys", "get", "k", "--yes"}, "unknown flag: --yes"},
		{[]string{"runs", "ls", "--limit", "abc"}, `invalid argument "abc" for "--limit" flag`},
		{[]string{"runs", "ls", "--limit", "0"}, "invalid --limit 0: must be at least 1"},
		{[]string{"runs", "ls", "--status", "done"}, `invalid --status "done": use one of queued, running, waiting, succeeded, failed, cancelled`},
		{[]string{"runs", "result", "x", "--wait", "soon"}, `invalid argument "soon" for "--wait" flag`},
		{[]string{"runs", "result", "x", "--wait", "-1s"}, "invalid --wait -1s: must not be negative"},
		{[]string{"runs", "trigger", "t", "--input", "{nope"}, "--input is not valid JSON"},
		{[]string{"runs", "trigger", "t", "--input", "[1]"}, "--input must be a JSON object, got an array"},
		{[]string{"runs", "trigger", "t", "--input", "@/nonexistent/input.json"}, "--input @/nonexistent/input.json: open /nonexistent/input.json"},
		{[]string{"runs", "trigger", "t", "--meta", "novalue"}, `--meta "novalue": want key=value`},
		{[]string{"runs", "trigger", "t", "--meta-json", `"x"`}, "--meta-json must be a JSON object, got a string"},
		{[]string{"runs", "trigger", "t", "--on-conflict", "merge"}, `invalid --on-conflict "merge"`},
		{[]string{"runs", "trigger", "t", "--priority", "4"}, `invalid --priority 4`},
		{[]string{"eval"}, "missing expression: give EXPR or --task NAME"},
		{[]string{"eval", "input.id", "--task", "t"}, "give either an expression or --task, not both"},
		{[]string{"eval", "a", "b"}, `taskq eval: unexpected argument "b"`},
		{[]string{"eval", "--task", "t", "--input", "1"}, "--input must be a JSON object, got a number"},
		{[]string{"events", "push"}, "taskq events push: missing argument KEY"},
		{[]string{"events", "push", "k"}, "missing --data"},
		{[]string{"events", "push", "k", "--data", "42"}, "--data must be a JSON object, got a number"},
		{[]string{"events", "push", "k", "--batch", "--data", "{}\n[1]"}, "--data line 2 must be a JSON object, got an array"},
		{[]string{"events", "push", "k", "--batch", "--data", "[{}, 2]"}, "--data element 2 must be a JSON object, got a number"},
		{[]string{"events", "push", "k", "--data", "{}", "--chunk", "0"}, "invalid --chunk 0"},
		{[]string{"events", "ls", "--offset", "-1"}, "invalid --offset -1"},
		{[]string{"completion"}, "taskq completion: missing argument SHELL"},
		{[]string{"completion", "tcsh"}, `unsupported shell "tcsh"`},
		{[]string{"serve"}, "no token: set --token or $TASKQ_TOKEN, or pass --insecure"},
		{[]string{"serve", "--insecure", "--log-level", "loud"}, `invalid --log-level "loud"`},
		{[]string{"dev", "--demo", "--no-demo"}, "--demo and --no-demo contradict each other"},
		{[]string{"help", "nope"}, "unknown help topic [nope]"},
		{[]string{"version", "extra"}, `taskq version: unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "--redis") {
				args = append([]string{"--redis", nowhere}, args...)
			}
			r := runWith(context.Background(), invocation{}, args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d (usage)\nstdout: %s\nstderr: %s", r.code, exitUsage, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("stderr does not name the problem %q:\n%s", tc.msg, r.stderr)
			}
			if !strings.Contains(r.stderr, "--help' for usage.") {
				t.Errorf("stderr does not point at --help:\n%s", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// An unreachable Redis is a failure (1), not a usage error, and says where
// it looked.
func TestUnreachableRedis(t *testing.T) {
	t.Parallel()
	r := runWith(context.Background(), invocation{}, "--redis", "redis://:secret@127.0.0.1:1/0", "keys", "ls")
	if r.code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", r.code, exitFailure, r.stderr)
	}
	if !strings.Contains(r.stderr, "cannot reach Redis at redis://:xxxxx@127.0.0.1:1/0") || strings.Contains(r.stderr, "secret") {
		t.Fatalf("stderr = %q, want the URL with its password hidden", r.stderr)
	}
}

// Progress and colours appear on a terminal only; piped output has none.
func TestProgressAndColourOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		onePartition(t, b)
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		for _, id := range []string{"a", "b", "c"} {
			triggerLease(t, c, id)
		}
		piped := cl.run("keys", "ls")
		if piped.code != 0 || piped.stderr != "" || strings.Contains(piped.stdout, "\x1b[") {
			t.Fatalf("piped: exit %d, stderr %q, stdout %q; want no progress and no colour", piped.code, piped.stderr, piped.stdout)
		}
		tty := runWith(context.Background(), invocation{tty: true}, cl.args([]string{"keys", "ls"})...)
		if tty.code != 0 {
			t.Fatalf("exit %d: %s", tty.code, tty.stderr)
		}
		want := "reading keys: 3"
		if b.IsCluster() {
			// The keys are read from one master after another, and the
			// line is redrawn at most every 100ms: the count it shows
			// last depends on how fast the masters answer.
			want = "reading keys: "
		}
		if !strings.Contains(tty.stderr, want) {
			t.Errorf("terminal stderr %q lacks progress %q", tty.stderr, want)
		}
		if !strings.HasSuffix(tty.stderr, "\r\x1b[K") {
			t.Errorf("the progress line is not erased at the end: %q", tty.stderr)
		}
		if !strings.Contains(tty.stdout, ansiBlue+"queued"+ansiReset) {
			t.Errorf("terminal table has no coloured status: %q", tty.stdout)
		}
		plain := runWith(context.Background(), invocation{tty: true}, cl.args([]string{"keys", "ls", "--no-color"})...)
		if strings.Contains(plain.stdout, "\x1b[") {
			t.Errorf("--no-color still colours: %q", plain.stdout)
		}
		jsonOut := runWith(context.Background(), invocation{tty: true}, cl.args([]string{"keys", "ls", "-o", "json"})...)
		if strings.Contains(jsonOut.stdout, "\x1b[") {
			t.Errorf("JSON output is coloured: %q", jsonOut.stdout)
		}
	})
}

// Every command documents itself with examples.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	root := (&app{streams: streams{getenv: func(string) string { return "" }}}).newRoot()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no examples", c.CommandPath())
		}
		if c.Short == "" {
			t.Errorf("%q has no short description", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Fatalf("walked %d commands, want the whole tree", n)
	}
	for _, args := range [][]string{{"--help"}, {"keys", "release", "--help"}, {"help", "runs", "trigger"}, {"runs"}} {
		r := runWith(context.Background(), invocation{}, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("taskq %s: exit %d, no examples in:\n%s", strings.Join(args, " "), r.code, r.stdout)
		}
	}
}

func TestCompletionAndVersion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runWith(context.Background(), invocation{}, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "taskq") || len(r.stdout) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
	r := runWith(context.Background(), invocation{}, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "taskq v0.0.0-test (go") {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
	if flag := runWith(context.Background(), invocation{}, "--version"); flag.code != 0 || flag.stdout != r.stdout {
		t.Errorf("--version: exit %d, %q; want what version prints, %q", flag.code, flag.stdout, r.stdout)
	}
	r = runWith(context.Background(), invocation{}, "version", "-o", "json")
	var v struct{ Version, Go string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Version != "v0.0.0-test" || v.Go == "" {
		t.Errorf("version -o json: %q, %v", r.stdout, err)
	}
}

// Shell completion offers the registered task names.
func TestCompletionOfTaskNames(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := seed(t, b)
		for _, args := range [][]string{{"tasks", "get", ""}, {"runs", "trigger", "pro"}, {"keys", "ls", "--task", ""}} {
			// A loaded machine running -race can take longer than a
			// person's 2 s to connect to the cluster.
			r := runWith(context.Background(), invocation{env: map[string]string{envCompleteTimeout: "30s"}},
				f.cli.args(append([]string{cobra.ShellCompRequestCmd}, args...))...)
			if r.code != 0 || !strings.Contains(r.stdout, "process-order\n") {
				t.Errorf("completing %q: exit %d, got %q", args, r.code, r.stdout)
			}
		}
	})
}

// Secrets in the environment are used but never printed: not as flag
// defaults in --help, not in errors.
func TestSecretsStayOutOfHelp(t *testing.T) {
	t.Parallel()
	env := map[string]string{envRedisURL: "redis://:hunter2@127.0.0.1:1/0", envToken: "tok-hunter3-0123456789"}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"keys", "ls"}} {
		r := runWith(context.Background(), invocation{env: env}, args...)
		if strings.Contains(r.stdout+r.stderr, "hunter") {
			t.Errorf("taskq %s printed a secret:\n%s%s", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
	// The environment's Redis URL is the one used.
	r := runWith(context.Background(), invocation{env: env}, "keys", "ls")
	if r.code != exitFailure || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("keys ls with $%s: exit %d, %q", envRedisURL, r.code, r.stderr)
	}
	// serve takes its token from the environment: no usage error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = runWith(ctx, invocation{env: env}, "serve", "--addr", "127.0.0.1:0")
	if r.code == exitUsage {
		t.Errorf("serve with $%s set: usage error %q", envToken, r.stderr)
	}
}

// A --task filter that names nothing that exists is most likely a typo: the
// listing says so and exits 3, where an existing task with no runs lists
// none and exits 0.
func TestRunsLsOfATaskThatDoesNotExist(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		r := cl.run("runs", "ls", "--task", "nosuch")
		if r.code != exitNotFound || !strings.Contains(r.stderr, `no task "nosuch"`) {
			t.Fatalf("runs ls --task nosuch: exit %d, %q", r.code, r.stderr)
		}
		triggerLease(t, c, "1")
		r = cl.run("runs", "ls", "--task", leaseTask.Name(), "--status", "failed")
		if r.code != exitOK || !strings.Contains(r.stdout, "No runs found.") {
			t.Fatalf("runs ls of a task with runs, none failed: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

// Shell completion offers recent run IDs for the commands that take one,
// and held idempotency keys for keys get and release, filtered by what was
// typed.
func TestCompletionOfRunIDsAndKeys(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := seed(t, b)
		complete := func(args ...string) []string {
			t.Helper()
			// A loaded machine running -race can take longer than a
			// person's 2 s to connect to the cluster.
			r := runWith(context.Background(), invocation{env: map[string]string{envCompleteTimeout: "30s"}},
				f.cli.args(append([]string{cobra.ShellCompRequestCmd}, args...))...)
			if r.code != 0 {
				t.Fatalf("completing %q: exit %d: %s", args, r.code, r.stderr)
			}
			var out []string
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !strings.HasPrefix(l, ":") {
					out = append(out, l)
				}
			}
			return out
		}
		queued, paid := f.runs["queued"], f.runs["paid"]
		for _, cmd := range [][]string{{"runs", "get"}, {"runs", "cancel"}, {"runs", "result"}, {"runs", "retry"}} {
			if got := complete(append(cmd, "")...); !slices.Contains(got, queued) || !slices.Contains(got, paid) {
				t.Errorf("completing %q: %q lacks %s and %s", cmd, got, queued, paid)
			}
			got := complete(append(cmd, queued[:13])...)
			if !slices.Contains(got, queued) {
				t.Errorf("completing %q %s: %q lacks %s", cmd, queued[:13], got, queued)
			}
			for _, id := range got {
				if !strings.HasPrefix(id, queued[:13]) {
					t.Errorf("completing %q %s offers %s", cmd, queued[:13], id)
				}
			}
			if got := complete(append(cmd, "no-such-")...); len(got) != 0 {
				t.Errorf("completing %q no-such-: %q", cmd, got)
			}
			if got := complete(append(cmd, queued, "")...); len(got) != 0 {
				t.Errorf("completing a second argument of %q: %q", cmd, got)
			}
		}
		for _, cmd := range [][]string{{"keys", "get"}, {"keys", "release"}} {
			got := complete(append(cmd, "order:100")...)
			if !slices.Contains(got, "order:1001") || !slices.Contains(got, "order:1003") {
				t.Errorf("completing %q order:100: %q", cmd, got)
			}
			for _, k := range got {
				if !strings.HasPrefix(k, "order:100") {
					t.Errorf("completing %q order:100 offers %q", cmd, k)
				}
			}
			if got := complete(append(cmd, "order:1003")...); !slices.Equal(got, []string{"order:1003"}) {
				t.Errorf("completing %q order:1003: %q", cmd, got)
			}
			// A glob character typed is matched as itself.
			if got := complete(append(cmd, "order:*")...); len(got) != 0 {
				t.Errorf("completing %q order:*: %q", cmd, got)
			}
		}
	})
}

// TASKQ_COMPLETE_TIMEOUT replaces the 2 s a completion may take when it is a
// positive duration, and is ignored otherwise.
func TestCompleteTimeoutFromEnvironment(t *testing.T) {
	for v, want := range map[string]time.Duration{"": completeTimeout, "5s": 5 * time.Second, "soon": completeTimeout, "-1s": completeTimeout} {
		a := &app{streams: streams{getenv: func(k string) string {
			if k == envCompleteTimeout {
				return v
			}
			return ""
		}}}
		if got := a.completeTimeout(); got != want {
			t.Errorf("TASKQ_COMPLETE_TIMEOUT=%q: %s, want %s", v, got, want)
		}
	}
}
