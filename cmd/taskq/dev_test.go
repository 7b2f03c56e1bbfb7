package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
)

var (
	devURL   = regexp.MustCompile(`HTTP API +(http://127\.0\.0\.1:\d+)`)
	devToken = regexp.MustCompile(`Token +([0-9a-f]+)`)
	serveURL = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)
)

var httpc = &http.Client{Timeout: 10 * time.Second}

// apiCall sends one request to the HTTP API and decodes the JSON answer.
func apiCall(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// checkAcceptedThenRejected triggers one order twice over HTTP: the first
// is accepted (201), the second rejected (409) naming the first run.
func checkAcceptedThenRejected(t *testing.T, base, token, orderID string) {
	t.Helper()
	if code, _ := apiCall(t, http.MethodGet, base+"/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("GET /healthz: %d", code)
	}
	body := map[string]any{"input": map[string]any{"orderId": orderID, "amount": 4200}}
	if code, _ := apiCall(t, http.MethodPost, base+"/api/v1/tasks/process-order/runs", "", body); code != http.StatusUnauthorized {
		t.Fatalf("trigger without a token: %d, want 401", code)
	}
	code, first := apiCall(t, http.MethodPost, base+"/api/v1/tasks/process-order/runs", token, body)
	runID, _ := first["runId"].(string)
	if code != http.StatusCreated || runID == "" {
		t.Fatalf("trigger: %d %v, want 201 with a runId", code, first)
	}
	code, dup := apiCall(t, http.MethodPost, base+"/api/v1/tasks/process-order/runs", token, body)
	if code != http.StatusConflict || dup["error"] != "idempotency_collision" || dup["existingRunId"] != runID {
		t.Fatalf("duplicate trigger: %d %v, want 409 idempotency_collision naming %s", code, dup, runID)
	}
}

// process is a taskq process whose output the test reads as it comes.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *redistest.LogBuffer
	done           chan error
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(taskqBinary(t), args...), stdout: &redistest.LogBuffer{}, stderr: &redistest.LogBuffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// No TASKQ_* variables from the environment of the test run.
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFor waits until the process printed want on stdout.
func (p *process) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(p.stdout.String(), want) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("taskq exited (%v) before printing %q\nstdout:\n%s\nstderr:\n%s", err, want, p.stdout.String(), p.stderr.String())
		case <-deadline:
			t.Fatalf("taskq did not print %q\nstdout:\n%s\nstderr:\n%s", want, p.stdout.String(), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p.stdout.String()
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("taskq did not exit\nstdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// taskq dev as a user runs it: it starts, answers /healthz, accepts a
// trigger, rejects its duplicate with 409, and stops cleanly on SIGINT.
func TestDevProcess(t *testing.T) {
	t.Parallel()
	t.Run("miniredis", func(t *testing.T) {
		p := startProcess(t, "dev", "--addr", "127.0.0.1:0", "--delay", "100ms")
		out := p.waitFor(t, "Press Ctrl-C to stop.")
		// The demo ran first: accepted, duplicate rejected naming that
		// run, result shown, webhook deduplicated.
		m := regexp.MustCompile(`accepted: run (\S+),`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no accepted run in the demo:\n%s", out)
		}
		for _, want := range []string{
			"rejected: duplicate of run " + m[1], "succeeded: charged 4200 EUR", "deduplicated to run ",
			"export TASKQ_REDIS_URL=redis://127.0.0.1:", "/api/v1/runs/" + m[1] + "/result?wait=30s",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("dev output lacks %q:\n%s", want, out)
			}
		}
		checkDev(t, p, out, "2001")
	})
	t.Run("redis", func(t *testing.T) {
		b := redistest.Real(t)
		cl := newCLI(t, b)
		p := startProcess(t, "dev", "--redis", cl.url, "--namespace", b.Namespace, "--addr", "127.0.0.1:0", "--no-demo")
		out := p.waitFor(t, "Press Ctrl-C to stop.")
		if !strings.Contains(out, "TASKQ_NAMESPACE="+b.Namespace) {
			t.Errorf("the printed commands do not select the namespace:\n%s", out)
		}
		checkDev(t, p, out, "2002")
		// The runs are in the Redis named, and the CLI sees them.
		r := cl.run("keys", "get", "order:2002")
		if r.code != 0 {
			t.Fatalf("keys get after dev: exit %d: %s", r.code, r.stderr)
		}
	})
}

func checkDev(t *testing.T, p *process, out, orderID string) {
	t.Helper()
	u, tok := devURL.FindStringSubmatch(out), devToken.FindStringSubmatch(out)
	if u == nil || tok == nil {
		t.Fatalf("no URL or token in:\n%s", out)
	}
	checkAcceptedThenRejected(t, u[1], tok[1], orderID)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), "Stopping...") {
		t.Errorf("no shutdown notice:\n%s", p.stdout.String())
	}
	if !strings.Contains(p.stderr.String(), "taskq worker stopped") || !strings.Contains(p.stderr.String(), "HTTP API stopped") {
		t.Errorf("worker or server did not stop gracefully:\n%s", p.stderr.String())
	}
}

// taskq dev --demo needs no HTTP: it runs the demo and exits by itself.
func TestDevDemoOnly(t *testing.T) {
	t.Parallel()
	p := startProcess(t, "dev", "--demo", "--delay", "50ms")
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	out := p.stdout.String()
	for _, want := range []string{"accepted: run ", "rejected: duplicate of run ", "succeeded: charged", "duplicate of the scheduled run", "succeeded once it was due", "Demo done."} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "HTTP API") || strings.Contains(out, "curl") {
		t.Errorf("--demo started the HTTP API:\n%s", out)
	}
}

// version is stamped at build time with -ldflags -X main.version.
func TestVersionStamp(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(taskqBinary(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "taskq v0.0.0-test ") {
		t.Fatalf("version: %q, %v", out, err)
	}
}

// taskq serve: the HTTP API over the namespace's registered tasks, shut
// down by the end of its context (SIGINT in the real process).
func TestServe(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := seed(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stderr := &redistest.LogBuffer{}
		done := make(chan result, 1)
		go func() {
			done <- runWith(ctx, invocation{stderr: stderr}, f.cli.args([]string{"serve", "--addr", "127.0.0.1:0", "--token", "s3cret-s3cret-s3cret"})...)
		}()
		deadline := time.Now().Add(10 * time.Second)
		var m []string
		for m == nil {
			if m = serveURL.FindStringSubmatch(stderr.String()); m == nil {
				if time.Now().After(deadline) {
					t.Fatalf("serve did not log its address: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		checkAcceptedThenRejected(t, "http://"+m[1], "s3cret-s3cret-s3cret", "3001")
		cancel()
		r := <-done
		if r.code != 0 {
			t.Fatalf("serve exit %d after its context ended: %s", r.code, r.stderr)
		}
		if !strings.Contains(stderr.String(), "HTTP API stopped") {
			t.Errorf("serve did not shut down gracefully:\n%s", stderr.String())
		}
	})
}
