package webui

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/taskq/taskq/pkg/client"
)

// suppressedCountMax is how many suppressed triggers a count reads at
// most (a run page's "N suppressed triggers", a key search's note).
const suppressedCountMax = 100

// countSuppressed counts the suppressed triggers o selects, up to
// suppressedCountMax; more says there are more.
func (u *UI) countSuppressed(ctx context.Context, o client.ListOptions) (n int, more bool, err error) {
	o.Limit = suppressedCountMax
	page, err := u.in.ListSuppressed(ctx, o)
	if err != nil {
		return 0, false, err
	}
	return len(page.Items), page.NextCursor != "", nil
}

// suppressedData is the suppressed triggers page.
type suppressedData struct {
	Key, Owner string
	Triggers   []client.SuppressedTrigger
	NextURL    string
	Pager      *pageNav
}

// eventOf is the ID of the event a trigger came from, "" when its source
// is not an event.
func eventOf(source string) string {
	id, ok := strings.CutPrefix(source, "event:")
	if !ok {
		return ""
	}
	return id
}

func (u *UI) suppressed(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := &suppressedData{Key: q.Get("key"), Owner: strings.TrimSpace(q.Get("owner"))}
	page, err := u.in.ListSuppressed(r.Context(), client.ListOptions{Key: d.Key, Owner: d.Owner, Cursor: q.Get("cursor"), Limit: pageSize})
	if err != nil {
		u.failErr(w, r, s, "list the suppressed triggers", err)
		return
	}
	d.Triggers = page.Items
	d.Pager = newPageNav(r, "/ui/suppressed", url.Values{"key": {d.Key}, "owner": {d.Owner}}, page.NextCursor, len(d.Triggers))
	d.NextURL = d.Pager.OlderURL
	// A search by key or owner reads a whole stream when it matches little:
	// it refreshes less often.
	slow := d.Key != "" || d.Owner != ""
	u.render(w, r, s, http.StatusOK, "suppressed", &view{Title: "Suppressed triggers", Nav: "suppressed", Poll: pollURL(r), SlowPoll: slow, Data: d})
}
