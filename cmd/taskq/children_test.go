package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// spawnLease spawns, as a handler of parent would, a lease child named
// name.
func spawnLease(t *testing.T, c *client.Client, parent, name, id string) string {
	t.Helper()
	ids, err := clientlink.Of(c).Spawn(context.Background(), clientlink.SpawnRequest{Def: leaseTask.Definition(), Parent: parent,
		Inputs: [][]byte{[]byte(`{"id":"` + id + `"}`)}, Options: []any{client.ChildName(name)}})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// runs get shows a run's parent, and its children in a table; -o json
// has them as the HTTP API does.
func TestRunsGetShowsParentAndChildren(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		parent := triggerLease(t, c, "p")
		child := spawnLease(t, c, parent, "welcome", "c")
		r := cl.run("runs", "get", parent)
		out := strings.Join(strings.Fields(r.stdout), " ")
		if r.code != exitOK || !strings.Contains(out, "Children: 1") || !strings.Contains(out, "NAME RUN TASK STATUS welcome "+child+" lease queued") {
			t.Fatalf("runs get of the parent: exit %d\n%s", r.code, r.stdout)
		}
		r = cl.run("runs", "get", child)
		if out := strings.Join(strings.Fields(r.stdout), " "); !strings.Contains(out, "Parent: "+parent) ||
			!strings.Contains(out, "Key: taskq:child:"+parent+"/welcome/lease:c") {
			t.Fatalf("runs get of the child:\n%s", r.stdout)
		}
		r = cl.run("runs", "get", parent, "-o", "json")
		var v client.RunInfo
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Children) != 1 || v.Children[0].RunID != child ||
			v.Children[0].Name != "welcome" || v.Children[0].Status != client.StatusQueued {
			t.Fatalf("runs get -o json: %v\n%s", err, r.stdout)
		}
	})
}
