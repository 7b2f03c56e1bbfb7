package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
)

// serve refuses, as usage errors before touching Redis, --insecure on an
// address other machines can reach and a token no client could send or
// too short to be a secret; the messages name the problem, never the
// token.
func TestServeRefusesUnsafeSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		msg  string
	}{
		{args: []string{"serve", "--insecure"}, msg: `only on a loopback address, not ":8080"`},
		{args: []string{"serve", "--insecure", "--addr", "0.0.0.0:8080"}, msg: "--addr 127.0.0.1:8080"},
		{args: []string{"serve", "--insecure", "--addr", "192.0.2.7:8080"}, msg: "loopback"},
		{args: []string{"serve", "--token", "short-secret"}, msg: "is 12 bytes long; use at least 16"},
		{args: []string{"serve"}, env: map[string]string{envToken: "a-long-enough-secret\n"}, msg: "starts or ends with whitespace"},
		{args: []string{"serve", "--token", " a-long-enough-secret"}, msg: "starts or ends with whitespace"},
		{args: []string{"serve", "--token", "a long enough secret"}, msg: "byte 0x20 at offset 1"},
		{args: []string{"serve", "--token", "a-long-enough-secret", "--read-only-token", "a-long-enough-secret"}, msg: "--read-only-token must differ from --token"},
		{args: []string{"serve", "--insecure", "--addr", "127.0.0.1:0", "--read-only-token", "a-long-enough-secret"}, msg: "--read-only-token needs --token"},
		{args: []string{"serve", "--token", "a-long-enough-secret", "--read-only-token", "short-secret"}, msg: "the read-only token (--read-only-token or $TASKQ_READONLY_TOKEN) is 12 bytes long"},
		{args: []string{"serve", "--token", "a-long-enough-secret"}, env: map[string]string{envReadOnlyToken: "short-secret"}, msg: "the read-only token"},
		{args: []string{"serve", "--insecure", "--addr", "127.0.0.1:0", "--scoped-token", "ci:read:" + strings.Repeat("0", 64)}, msg: "leave out --tokens-file and --scoped-token"},
		{args: []string{"serve", "--scoped-token", "ci:write:" + strings.Repeat("0", 64)}, msg: `--scoped-token: token ci: unknown scope "write"`},
		{args: []string{"serve", "--scoped-token", "ci:read"}, msg: "is not NAME:SCOPE[,SCOPE]:SHA256"},
		{args: []string{"serve", "--token", "a-long-enough-secret", "--tls-cert", "c.pem"}, msg: "--tls-cert and --tls-key go together"},
		{args: []string{"serve", "--token", "a-long-enough-secret"}, env: map[string]string{envTLSKey: "k.pem"}, msg: "--tls-cert and --tls-key go together"},
		{args: []string{"serve", "--token", "a-long-enough-secret", "--tls-client-ca", "ca.pem"}, msg: "--tls-client-ca needs --tls-cert"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runWith(context.Background(), invocation{env: tc.env}, append([]string{"--redis", "redis://127.0.0.1:1/0"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("exit %d, want %d (usage) naming %q:\n%s", r.code, exitUsage, tc.msg, r.stderr)
			}
			if strings.Contains(r.stderr, "secret") {
				t.Errorf("the error quotes the token:\n%s", r.stderr)
			}
		})
	}
	// Allowed: --insecure on loopback, a good token anywhere. Both get past
	// the checks to the (cancelled) run, not a usage error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"serve", "--insecure", "--addr", "127.0.0.1:0"},
		{"serve", "--insecure", "--addr", "[::1]:0"},
		{"serve", "--token", "a-long-enough-secret", "--addr", ":0"},
		{"serve", "--token", "a-long-enough-secret", "--read-only-token", "another-long-enough-secret", "--addr", ":0"},
		{"serve", "--scoped-token", "ci:trigger,read:" + strings.Repeat("0", 64), "--addr", ":0"},
	} {
		if r := runWith(ctx, invocation{}, append([]string{"--redis", "redis://127.0.0.1:1/0"}, args...)...); r.code == exitUsage {
			t.Errorf("%s: usage error %s", strings.Join(args, " "), r.stderr)
		}
	}
}

// serve mounts the dashboard under /ui/, where the read-only token signs
// in; --no-ui leaves it out.
func TestServeMountsTheDashboard(t *testing.T) {
	t.Parallel()
	cl := newCLI(t, redistest.Mini(t))
	serve := func(t *testing.T, extra ...string) (url string, stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &redistest.LogBuffer{}
		done := make(chan result, 1)
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--token", "s3cret-s3cret-s3cret", "--read-only-token", "r3ader-r3ader-r3ader"}, extra...)
		go func() { done <- runWith(ctx, invocation{stderr: stderr}, cl.args(args)...) }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if m := serveURL.FindStringSubmatch(stderr.String()); m != nil {
				var once sync.Once
				return "http://" + m[1], func() { once.Do(func() { cancel(); <-done }) }
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("serve did not log its address: %s", stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	base, stop := serve(t)
	defer stop()
	resp, err := noRedirect.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/login") {
		t.Fatalf("GET /ui/: %d to %q, want 303 to the sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/login", strings.NewReader("token=r3ader-r3ader-r3ader"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("sign in with the read-only token: %d, cookies %v; want 303 and a session", resp.StatusCode, resp.Cookies())
	}
	stop()

	base, stopNoUI := serve(t, "--no-ui")
	defer stopNoUI()
	resp, err = noRedirect.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/ with --no-ui: %d, want 404", resp.StatusCode)
	}
}
