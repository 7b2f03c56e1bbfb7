package webui

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
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
	if len(third.runs) != 20 || third.count != "101–120" || third.links["next"] != "" || third.links["newest"] == "" {
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
