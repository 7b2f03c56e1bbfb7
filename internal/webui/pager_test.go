package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

var (
	runLinkRe = regexp.MustCompile(`class="run-link" href="/ui/runs/([^"]+)"`)
	pagerRe   = regexp.MustCompile(`<a href="([^"]+)" id="(newer|newest|next)"`)
	countRe   = regexp.MustCompile(`id="page-count">([^<]*)<`)
)

// listPage is one page of the runs list: its runs, its paging links and
// what it says it shows.
type listPage struct {
	runs  []string
	links map[string]string
	count string
}

func readListPage(t *testing.T, b *browser, path string) listPage {
	t.Helper()
	p := b.get(path)
	if p.status != 200 {
		t.Fatalf("GET %s: %d", path, p.status)
	}
	lp := listPage{links: map[string]string{}}
	for _, m := range runLinkRe.FindAllStringSubmatch(p.body, -1) {
		lp.runs = append(lp.runs, m[1])
	}
	for _, m := range pagerRe.FindAllStringSubmatch(p.body, -1) {
		lp.links[m[2]] = html.UnescapeString(m[1])
	}
	if m := countRe.FindStringSubmatch(p.body); m != nil {
		lp.count = m[1]
	}
	return lp
}

// The runs list pages older and newer: each page says which runs of the
// listing it shows, Newer goes back to exactly the page before (filter
// kept), Newest to the first, and the last page has no Older.
func TestRunsListPagesNewerAndOlder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	for i := range 2*pageSize + 20 {
		e.trigger(ctx, order{ID: fmt.Sprint("page-", i)})
	}
	b := e.browser()
	b.signIn(testToken)
	first := readListPage(t, b, "/ui/runs?task=ui-order")
	if len(first.runs) != pageSize || first.count != "1–50" || first.links["next"] == "" || first.links["newer"] != "" {
		t.Fatalf("first page: %d runs, %q, links %v", len(first.runs), first.count, first.links)
	}
	second := readListPage(t, b, first.links["next"])
	if len(second.runs) != pageSize || second.count != "51–100" || second.links["newer"] == "" || slices.Contains(first.runs, second.runs[0]) {
		t.Fatalf("second page: %d runs, %q, links %v", len(second.runs), second.count, second.links)
	}
	if !strings.Contains(second.links["next"], "task=ui-order") {
		t.Errorf("the filter is lost going on: %s", second.links["next"])
	}
	third := readListPage(t, b, second.links["next"])
	if len(third.runs) != 20 || third.count != "101–120 of 120" || third.links["next"] != "" || third.links["newest"] == "" {
		t.Fatalf("last page: %d runs, %q, links %v", len(third.runs), third.count, third.links)
	}
	back := readListPage(t, b, third.links["newer"])
	if !slices.Equal(back.runs, second.runs) || back.count != "51–100" {
		t.Fatalf("newer from the last page: %q with %d runs, want the second page", back.count, len(back.runs))
	}
	if top := readListPage(t, b, third.links["newest"]); !slices.Equal(top.runs, first.runs) || top.count != "1–50" {
		t.Fatalf("newest: %q", top.count)
	}
	if top := readListPage(t, b, back.links["newer"]); !slices.Equal(top.runs, first.runs) || top.links["newer"] != "" {
		t.Fatalf("newer from the second page: %q, links %v", top.count, top.links)
	}
}

// walkList reads a list from path on through its Older links and returns
// what each page says it shows.
func walkList(t *testing.T, b *browser, path string) []string {
	t.Helper()
	var counts []string
	for range 10 {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		m := countRe.FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("GET %s: no page count", path)
		}
		counts = append(counts, m[1])
		next := ""
		for _, l := range pagerRe.FindAllStringSubmatch(p.body, -1) {
			if l[2] == "next" {
				next = html.UnescapeString(l[1])
			}
		}
		if next == "" {
			return counts
		}
		path = next
	}
	t.Fatalf("%s: more than 10 pages", path)
	return nil
}

// The lists say how many items they hold where the total is had in one
// round trip: the runs unfiltered and the events, from the size of their
// index, on every page; a filtered runs list and the suppressed triggers
// once their last page shows how many there were; the keys, found by
// SCAN, never.
func TestListPagesCountTheirTotal(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, rb *redistest.Backend) {
		ctx := context.Background()
		e := newEnv(t, rb, envOptions{})
		var ids []string
		for i := range 2*pageSize + 20 {
			ids = append(ids, e.trigger(ctx, order{ID: fmt.Sprint("total-", i)}))
		}
		for _, id := range ids[:5] {
			if _, err := e.c.Handle(id).Cancel(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := range pageSize + 4 {
			if _, err := client.RunNoWait(ctx, e.c, orderTask, order{ID: "total-100", Amount: i + 1}); !errors.Is(err, client.ErrIdempotencyCollision) {
				t.Fatalf("duplicate %d: %v, want a collision", i, err)
			}
		}
		ing, err := events.New(e.c, events.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for i := range pageSize + 10 {
			if _, err := ing.Push(ctx, "ui.total", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		b := e.browser()
		b.signIn(testToken)
		for _, c := range []struct {
			path string
			want []string
		}{
			{"/ui/runs", []string{"1–50 of 120", "51–100 of 120", "101–120 of 120"}},
			{"/ui/runs?status=cancelled", []string{"1–5 of 5"}},
			{"/ui/runs?task=ui-order&status=queued", []string{"1–50", "51–100", "101–115 of 115"}},
			{"/ui/events", []string{"1–50 of 60", "51–60 of 60"}},
			{"/ui/suppressed", []string{"1–50", "51–54 of 54"}},
		} {
			if got := walkList(t, b, c.path); !slices.Equal(got, c.want) {
				t.Errorf("%s: pages say %q, want %q", c.path, got, c.want)
			}
		}
		for _, count := range walkList(t, b, "/ui/keys") {
			if strings.Contains(count, " of ") {
				t.Errorf("a keys page says %q: SCAN has no total", count)
			}
		}
		if p := b.get("/ui/keys"); !strings.Contains(p.body, "no total is counted") {
			t.Error("the keys page does not say it has no total")
		}
	})
}
