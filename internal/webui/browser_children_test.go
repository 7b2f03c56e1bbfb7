package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// spawnOrders spawns, as parent's handler would, a child of orderTask for
// each id; opts are the spawn's (client.ChildName, client.Detached).
func (e *env) spawnOrders(ctx context.Context, parent string, ids []string, opts ...client.RunOption) []string {
	e.t.Helper()
	inputs := make([][]byte, len(ids))
	for i, id := range ids {
		inputs[i], _ = json.Marshal(order{ID: id})
	}
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	pos := 0
	out, err := clientlink.Of(e.c).Spawn(ctx, clientlink.SpawnRequest{Def: orderTask.Definition(), Parent: parent, Inputs: inputs,
		Many: len(ids) > 1, Options: anyOpts, Position: func(n int) int { pos += n; return pos - n }})
	if err != nil {
		e.t.Fatalf("spawn children of %s: %v", parent, err)
	}
	return out
}

// family makes a run with a child that has children of its own: three by
// position (one cancelled, one recorded and not created yet), one named
// and detached. It returns the parent, the child and its children.
func (e *env) family(ctx context.Context) (parent, child string, kids []string) {
	e.t.Helper()
	parent = e.trigger(ctx, order{ID: "family-parent"})
	child = e.spawnOrders(ctx, parent, []string{"family-child-with-a-rather-long-id-" + strings.Repeat("x", 30)},
		client.ChildName("charge-the-card"))[0]
	kids = e.spawnOrders(ctx, child, []string{"family-kid-0", "family-kid-1"})
	if _, err := e.c.Handle(kids[1]).Cancel(ctx); err != nil {
		e.t.Fatal(err)
	}
	kids = append(kids, e.spawnOrders(ctx, child, []string{"family-kid-detached"}, client.ChildName("receipt"), client.Detached())...)
	// Recorded, as a spawn cut short leaves it: not created yet.
	st := clientlink.Store(e.c)
	rec := []engine.Child{{Name: "#2", RunID: "0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10", Task: orderTask.Name(), Key: "taskq:child:" + child + "/#2/order:late"}}
	if _, err := st.RecordChildren(ctx, child, rec); err != nil {
		e.t.Fatal(err)
	}
	return parent, child, append(kids, rec[0].RunID)
}

// The run page shows a small tree: the run's parent, the run, its
// children, each linked to its page with its task and status; a child not
// created yet and a detached one say so; the links lead to the runs.
func TestRunFamilyInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{PollInterval: time.Hour}})
	ctx := context.Background()
	parent, child, kids := e.family(ctx)
	newTab := startChromium(t, exe, dir)
	b, closeTab := newTab()
	defer closeTab()
	b.signIn(e.url, testToken, "admin")

	b.open(e.url, "/ui/runs/"+child, 1280)
	got := b.waitJS("the run's tree", `(() => {
		const tree = document.getElementById('run-tree');
		if (!tree) return null;
		const p = document.querySelector('#tree-parent > a');
		return {
			parent: p && p.getAttribute('href'),
			self: document.querySelector('#tree-self > code').textContent,
			kids: [...document.querySelectorAll('#child-list > li.tree-child')].map(li => [
				li.dataset.name, li.querySelector('a').getAttribute('href'), li.querySelector('.status') ? li.querySelector('.status').textContent : li.textContent.includes('not created yet') ? 'not created' : '?',
				li.textContent.includes('detached')]),
		};
	})()`)
	var tree struct {
		Parent, Self string
		Kids         [][]any
	}
	if err := json.Unmarshal(got, &tree); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([][]any{
		{"#0", "/ui/runs/" + kids[0], "queued", false},
		{"#1", "/ui/runs/" + kids[1], "cancelled", false},
		{"#2", "/ui/runs/" + kids[3], "not created", false},
		{"receipt", "/ui/runs/" + kids[2], "queued", true},
	})
	if tree.Parent != "/ui/runs/"+parent || tree.Self != child || fmt.Sprint(tree.Kids) != want {
		t.Fatalf("tree = %+v\nwant parent %s, self %s, children %s", tree, parent, child, want)
	}
	b.shot("run-family")
	b.do("follow the parent's link", chromedp.Click(chromedp.CSS("#tree-parent > a")), chromedp.WaitVisible(chromedp.ID("run-tree")))
	if id := eval[string](b, "read the parent page", `document.getElementById('run-id').textContent`); id != parent {
		t.Fatalf("the parent's link led to %s", id)
	}
	if n := eval[int](b, "count the parent's children", `document.querySelectorAll('#child-list > li.tree-child').length`); n != 1 {
		t.Fatalf("the parent lists %d children, want 1", n)
	}
	b.shot("run-parent")
	b.open(e.url, "/ui/runs/"+kids[0], 390)
	if d := eval[int](b, "measure a child's page", sideways); d > 0 {
		t.Errorf("a child's page at 390 px scrolls sideways by %d px", d)
	}
	b.shot("run-child-390")
}
