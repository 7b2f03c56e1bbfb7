package webui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// pagePrevMax bounds the pages a list remembers to go back through.
const pagePrevMax = 100

// pageNav is the paging of a list read a cursor at a time, newest first:
// links to the next (older) page and back to the one before (newer), and
// which items of the listing this page shows. The lists' cursors only go
// forward, so the URL keeps the cursors of the pages before this one
// (prev, each "<items before that page>:<its cursor>") and how many items
// they showed (seen).
type pageNav struct {
	// From and To are the positions in the listing of the items shown,
	// from 1 (To < From when the page is empty).
	From, To int
	// NewerURL goes back a page, NewestURL to the first ("" on the first
	// page); OlderURL goes on ("" on the last).
	NewerURL, NewestURL, OlderURL string
	// Total is how many items the listing holds, as the page says it
	// ("1,234"), or "" when no total was had cheaply: on the last page it
	// is the items shown up to it, otherwise what withTotal was given.
	Total string
}

// withTotal gives the page the listing's total, n, counted apart from the
// listing (an index's size); on the last page the items shown up to it
// stay the total. A count below the items already shown (entries removed
// since) is raised to them.
func (n *pageNav) withTotal(total int) *pageNav {
	if n.OlderURL != "" {
		n.Total = thousands(max(total, n.To))
	}
	return n
}

// noTotal leaves the page without a total, as for a listing by SCAN, whose
// pages may repeat an item.
func (n *pageNav) noTotal() *pageNav {
	n.Total = ""
	return n
}

// thousands writes n in decimal with its thousands separated by commas.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// newPageNav makes the paging of the list at path, whose filter (without
// cursor) is filter, for the request r that showed shown items and whose
// listing goes on from next ("" once it has ended).
func newPageNav(r *http.Request, path string, filter url.Values, next string, shown int) *pageNav {
	q := r.URL.Query()
	cursor, prev := q.Get("cursor"), q["prev"]
	seen, _ := strconv.Atoi(q.Get("seen"))
	if cursor == "" {
		prev, seen = nil, 0
	}
	seen = max(seen, 0)
	link := func(cursor string, prev []string, seen int) string {
		v := url.Values{}
		for k, vs := range filter {
			if len(vs) > 0 && vs[0] != "" {
				v[k] = vs
			}
		}
		if cursor != "" {
			v.Set("cursor", cursor)
			v["prev"] = prev
			if seen > 0 {
				v.Set("seen", strconv.Itoa(seen))
			}
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	n := &pageNav{From: seen + 1, To: seen + shown}
	if next != "" {
		older := append(append([]string(nil), prev...), strconv.Itoa(seen)+":"+cursor)
		if len(older) > pagePrevMax {
			older = older[len(older)-pagePrevMax:]
		}
		n.OlderURL = link(next, older, seen+shown)
	} else {
		n.Total = thousands(seen + shown)
	}
	if cursor != "" {
		n.NewestURL = link("", nil, 0)
		n.NewerURL = n.NewestURL
		if len(prev) > 0 {
			before, c, _ := strings.Cut(prev[len(prev)-1], ":")
			b, _ := strconv.Atoi(before)
			n.NewerURL = link(c, prev[:len(prev)-1], b)
		}
	}
	return n
}
