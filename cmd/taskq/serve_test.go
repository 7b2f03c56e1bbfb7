package main

import (
	"context"
	"strings"
	"testing"
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
	} {
		if r := runWith(ctx, invocation{}, append([]string{"--redis", "redis://127.0.0.1:1/0"}, args...)...); r.code == exitUsage {
			t.Errorf("%s: usage error %s", strings.Join(args, " "), r.stderr)
		}
	}
}
