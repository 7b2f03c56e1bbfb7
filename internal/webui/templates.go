package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// parsePages parses every page with the layout: one template set per page,
// each defining "page" (the whole document) and "live" (the part a poll
// refreshes).
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("webui: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"login", "error", "overview", "runs", "run", "cancel", "retry", "suppressed", "keys", "release", "events", "event", "workers", "schedules", "task"} {
		files := []string{"templates/" + name + ".html"}
		if name == "overview" || name == "task" {
			files = append(files, "templates/stats.html") // the charts and queue counts both show
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, files...)
		if err != nil {
			return nil, fmt.Errorf("webui: templates: %w", err)
		}
		pages[name] = t
	}
	return pages, nil
}

func funcs() template.FuncMap {
	return template.FuncMap{
		"ago":     ago,
		"ts":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"dur":     dur,
		"millis":  func(m client.Millis) string { return dur(time.Duration(m)) },
		"pretty":  pretty,
		"runPath": func(id string) string { return "/ui/runs/" + url.PathEscape(id) },
		"eventPath": func(id string) string {
			return "/ui/events/" + url.PathEscape(id)
		},
		"releasePath": func(key, owner string) string {
			return "/ui/keys/release?" + url.Values{"key": {key}, "owner": {owner}}.Encode()
		},
		"runsPath": func(k, v string) string { return "/ui/runs?" + url.Values{k: {v}}.Encode() },
		"taskPath": func(name string) string { return "/ui/tasks/" + url.PathEscape(name) },
		"suppressedPath": func(k, v string) string {
			return "/ui/suppressed?" + url.Values{k: {v}}.Encode()
		},
		"eventOf":  eventOf,
		"plus1":    func(n int) int { return n + 1 },
		"terminal": func(s client.Status) bool { return s.Terminal() },
		"count":    func(m map[client.Status]int, s client.Status) int { return m[s] },
	}
}

// ago says how long before now t was ("3m ago"), or how long after ("in 5s").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + dur(-d)
	}
	return dur(d) + " ago"
}

// dur writes a duration to the second (to the millisecond under one).
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return d.Round(time.Second).String()
	}
	days := d / (24 * time.Hour)
	return strconv.Itoa(int(days)) + "d" + (d - days*24*time.Hour).Round(time.Minute).String()
}

// pretty indents JSON for reading; what is not JSON is shown as it is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
