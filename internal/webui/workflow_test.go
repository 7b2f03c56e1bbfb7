package webui

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// The run page of a workflow run no worker has begun draws its task's
// registered DAG, layer by layer, every node pending and none linked.
func TestQueuedWorkflowRunPageDrawsItsDAG(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(wfOrder.Definition())
		ref, err := client.RunNoWait(context.Background(), e.c, wfOrder, order{ID: "wf-queued"})
		if err != nil {
			t.Fatal(err)
		}
		br := e.browser()
		br.signIn(testToken)
		p := br.get("/ui/runs/" + ref.ID())
		var got []string
		for _, m := range regexp.MustCompile(`<li class="dag-node [^"]*" data-name="([^"]+)" data-status="([^"]+)">`).FindAllStringSubmatch(p.body, -1) {
			got = append(got, m[1]+":"+m[2])
		}
		want := "ui-wf-fetch:pending ui-wf-charge-the-card:pending ui-wf-pack:pending ui-wf-ship:pending ui-wf-refund:pending"
		if strings.Join(got, " ") != want {
			t.Fatalf("the queued workflow's page draws %v; want %s\n%s", got, want, p.body)
		}
		if strings.Contains(p.body, `class="dag-name"><a`) {
			t.Fatal("a node of a workflow run that has not begun links to a run")
		}
	})
}
