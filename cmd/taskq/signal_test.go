package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// keys signal and runs signal deliver a payload as POST
// /api/v1/keys/{key}/signal and Inspector.SignalRun do: stored with the
// run in order, the receipt printed; a key nobody holds and a run that
// does not exist exit 3, a missing or bad --data exits 2.
func TestSignalCommands(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		id := triggerLease(t, c, "s1")

		r := cl.run("keys", "signal", "lease:s1", "--data", `{"approved":true}`)
		if r.code != 0 || !strings.Contains(r.stdout, "sent to run "+id+`, which holds key "lease:s1"`) {
			t.Fatalf("keys signal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = cl.runIn(`"second"`, "runs", "signal", id, "--data", "-", "-o", "json")
		var rec wire.Signalled
		if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || r.code != 0 || rec.RunID != id || rec.SignalID == "" {
			t.Fatalf("runs signal -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		page, err := c.Inspector().RunSignals(ctx, id, client.ListOptions{})
		if err != nil || len(page.Items) != 2 || string(page.Items[0].Payload) != `{"approved":true}` ||
			string(page.Items[1].Payload) != `"second"` || page.Items[1].SignalID != rec.SignalID {
			t.Fatalf("the run's signals: %+v, %v", page, err)
		}

		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"keys", "signal", "lease:nobody", "--data", "1"}, exitNotFound, `idempotency key "lease:nobody" is not held`},
			{[]string{"runs", "signal", "01900000-0000-7000-8000-000000000000", "--data", "1"}, exitNotFound, "01900000-0000-7000-8000-000000000000"},
			{[]string{"keys", "signal", "lease:s1"}, exitUsage, "missing --data"},
			{[]string{"runs", "signal", id, "--data", "{nope"}, exitUsage, "--data is not valid JSON"},
		} {
			r := cl.run(tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("taskq %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
		}
		if page, _ := c.Inspector().RunSignals(ctx, id, client.ListOptions{}); len(page.Items) != 2 {
			t.Errorf("refused signals were stored: %+v", page)
		}
	})
}
