package main

import (
	"context"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
)

// --partitions (or $TASKQ_PARTITIONS) opens the namespace with that
// partition count: the first use records it, a later command with another
// count is refused naming both, and one without adopts it.
func TestPartitionsFlag(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		cl := newCLI(t, b)
		if r := cl.run("--partitions", "4", "runs", "ls"); r.code != exitOK {
			t.Fatalf("first use with 4: exit %d: %s", r.code, r.stderr)
		}
		r := cl.run("--partitions", "2", "runs", "ls")
		if r.code != exitFailure || !strings.Contains(r.stderr, "has 4 partitions") || !strings.Contains(r.stderr, "not the 2 configured") {
			t.Fatalf("with 2: exit %d, stderr %q; want 1 naming 4 and 2", r.code, r.stderr)
		}
		env := runWith(context.Background(), invocation{env: map[string]string{envPartitions: "2"}}, cl.args([]string{"runs", "ls"})...)
		if env.code != exitFailure || !strings.Contains(env.stderr, "not the 2 configured") {
			t.Fatalf("$%s=2: exit %d, stderr %q", envPartitions, env.code, env.stderr)
		}
		if r := cl.run("runs", "ls"); r.code != exitOK {
			t.Fatalf("unconfigured: exit %d: %s", r.code, r.stderr)
		}
		for _, bad := range [][]string{{"--partitions", "-1"}, {"--partitions", "1025"}, {"--namespace", "a{b}"}} {
			r := runWith(context.Background(), invocation{}, append([]string{"--redis", cl.url}, append(bad, "runs", "ls")...)...)
			if r.code != exitUsage {
				t.Fatalf("%v: exit %d, stderr %q; want a usage error", bad, r.code, r.stderr)
			}
		}
		bad := runWith(context.Background(), invocation{env: map[string]string{envPartitions: "four"}}, cl.args([]string{"runs", "ls"})...)
		if bad.code != exitUsage || !strings.Contains(bad.stderr, `"four"`) {
			t.Fatalf("$%s=four: exit %d, stderr %q", envPartitions, bad.code, bad.stderr)
		}
	})
}
