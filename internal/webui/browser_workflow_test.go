package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The workflow the run page draws: fetch -> {charge, pack} -> ship, and
// refund on failure; charge fails.
var (
	wfFetch  = task.Must[order, string]("ui-wf-fetch", task.Options{})
	wfCharge = task.Must[order, string]("ui-wf-charge-the-card", task.Options{})
	wfPack   = task.Must[order, string]("ui-wf-pack", task.Options{})
	wfShip   = task.Must[order, string]("ui-wf-ship", task.Options{})
	wfRefund = task.Must[order, string]("ui-wf-refund", task.Options{})
	wfOrder  = task.Must[order, map[string]json.RawMessage]("ui-wf-order", task.Options{Workflow: &task.Workflow{
		Nodes: []task.Node{
			{Task: wfFetch.Definition()},
			{Task: wfCharge.Definition(), Parents: []string{"ui-wf-fetch"}},
			{Task: wfPack.Definition(), Parents: []string{"ui-wf-fetch"}},
			{Task: wfShip.Definition(), Parents: []string{"ui-wf-charge-the-card", "ui-wf-pack"}},
		},
		OnFailure: wfRefund.Definition(),
	}})
)

// The run page of a workflow draws its DAG by layers, each node with its
// state and a link to its run: a failed node, the node after it skipped
// with the reason, the on-failure task last. Nothing scrolls sideways at a
// phone's width.
func TestWorkflowInABrowser(t *testing.T) {
	exe := chromium(t)
	dir := screenshots(t)
	b := redistest.Mini(t)
	e := newEnv(t, b, envOptions{ui: Options{PollInterval: time.Hour}})
	ctx := context.Background()
	w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "ui-wf-worker", Logger: quiet,
		FetchBlock: 50 * time.Millisecond, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []*task.Task[order, string]{wfFetch, wfCharge, wfPack, wfShip, wfRefund} {
		if err := worker.Handle(w, tk, func(ctx worker.Context, o order) (string, error) {
			if tk == wfCharge {
				return "", errors.New("card declined")
			}
			return tk.Name() + " " + o.ID, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := worker.HandleWorkflow(w, wfOrder); err != nil {
		t.Fatal(err)
	}
	runWorker(ctx, t, w)
	ref, err := client.RunNoWait(ctx, e.c, wfOrder, order{ID: "wf-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Result(ctx); err == nil {
		t.Fatal("the workflow succeeded; want it failed by its charge")
	}
	info, err := e.c.Inspector().GetRun(ctx, ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	runOf := map[string]string{}
	for _, n := range info.Workflow {
		runOf[n.Name] = n.RunID
	}

	newTab := startChromium(t, exe, dir)
	tab, closeTab := newTab()
	defer closeTab()
	tab.signIn(e.url, testToken, "admin")
	for _, width := range []int64{1280, 390} {
		tab.open(e.url, "/ui/runs/"+ref.ID(), width)
		got := tab.waitJS("the workflow's DAG", `(() => {
			const dag = document.getElementById('dag');
			if (!dag) return null;
			return [...dag.querySelectorAll(':scope > li.dag-layer')].map(layer =>
				[...layer.querySelectorAll('li.dag-node')].map(n => {
					const a = n.querySelector('.dag-name a');
					const r = n.querySelector('.dag-reason');
					return [n.dataset.name, n.querySelector('.status').textContent, a ? a.getAttribute('href') : '', r ? r.textContent : ''];
				}));
		})()`)
		var layers [][][]string
		if err := json.Unmarshal(got, &layers); err != nil {
			t.Fatal(err)
		}
		link := func(name string) string { return "/ui/runs/" + runOf[name] }
		want := fmt.Sprint([][][]string{
			{{"ui-wf-fetch", "succeeded", link("ui-wf-fetch"), ""}},
			{{"ui-wf-charge-the-card", "failed", link("ui-wf-charge-the-card"), ""}, {"ui-wf-pack", "succeeded", link("ui-wf-pack"), ""}},
			{{"ui-wf-ship", "skipped", "", `parent "ui-wf-charge-the-card" failed`}},
			{{"ui-wf-refund", "succeeded", link("ui-wf-refund"), ""}},
		})
		if fmt.Sprint(layers) != want {
			t.Fatalf("at %d px the DAG = %v\nwant %s", width, layers, want)
		}
		if d := eval[int](tab, "measure the workflow's page", sideways); d > 0 {
			t.Errorf("the workflow's page at %d px scrolls sideways by %d px", width, d)
		}
		tab.do("scroll to the DAG", chromedp.ScrollIntoView(chromedp.ID("workflow")))
		tab.shot(fmt.Sprintf("workflow-%d", width))
	}
	tab.do("follow the failed node's link", chromedp.Click(chromedp.CSS(`li.dag-node[data-name="ui-wf-charge-the-card"] a`)),
		chromedp.WaitVisible(chromedp.ID("run-id")))
	if id := eval[string](tab, "read the node's page", `document.getElementById('run-id').textContent`); id != runOf["ui-wf-charge-the-card"] {
		t.Fatalf("the node's link led to %s", id)
	}
}
