package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/taskq/taskq/internal/runview"
	"github.com/taskq/taskq/pkg/client"
)

// parsePages parses every page with the layout: one template set per page,
// each defining "page" (the whole document) and "live" (the part a poll
// refreshes).
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/pager.html")
	if err != nil {
		return nil, fmt.Errorf("webui: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"login", "error", "overview", "runs", "run", "cancel", "retry", "suppressed", "keys", "release", "events", "event", "workers", "schedules", "tasks", "task", "bulk", "ratelimits", "session"} {
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
		"ago":       ago,
		"ts":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"dur":       dur,
		"millis":    dur,
		"retryable": runview.Retryable,
		"pretty":    pretty,
		"runPath":   func(id string) string { return "/ui/runs/" + url.PathEscape(id) },
		"eventPath": func(id string) string {
			return "/ui/events/" + url.PathEscape(id)
		},
		"releasePath": func(key, owner string) string {
			return "/ui/keys/release?" + url.Values{"key": {key}, "owner": {owner}}.Encode()
		},
		"taskPath":     taskPath,
		"bulkURL":      bulkURL,
		"schedulePath": func(name string) string { return "/ui/schedules/" + url.PathEscape(name) },
		"runsPath":     func(k, v string) string { return "/ui/runs?" + url.Values{k: {v}}.Encode() },
		"suppressedPath": func(k, v string) string {
			return "/ui/suppressed?" + url.Values{k: {v}}.Encode()
		},
		"keytext":  keyText,
		"eventOf":  eventOf,
		"source":   webhookSource,
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
// Every value is shown the same way whoever wrote it (see jsonText).
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return jsonText(b.String())
}

// jsonText rewrites the strings of valid JSON one way: a printable
// character is written as itself, even where its writer escaped it (Go's
// encoder writes <, > and & as \u003c, a client may not), and every other
// character (control, format such as a bidi override, invisible) as a
// \uXXXX escape, even where its writer wrote it raw, so that no value can
// reorder or hide part of the page. " and \ keep their escapes.
func jsonText(js string) string {
	var b strings.Builder
	b.Grow(len(js))
	inString := false
	for i := 0; i < len(js); {
		r, size := utf8.DecodeRuneInString(js[i:])
		switch {
		case r == '"':
			inString = !inString
		case !inString:
		case r == '\\' && js[i+1] == 'u':
			if n, err := strconv.ParseUint(js[i+2:i+6], 16, 32); err == nil {
				if r := rune(n); r != '"' && r != '\\' && !utf16.IsSurrogate(r) && unicode.IsPrint(r) {
					b.WriteRune(r)
					i += 6
					continue
				}
			}
			size = 6
		case r == '\\':
			size = 2
		case !unicode.IsPrint(r) && r != ' ':
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
			i += size
			continue
		}
		b.WriteString(js[i : i+size])
		i += size
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// keyText writes a key (an idempotency key, an event key) as HTML text
// in which every character that would not show as itself is shown
// escaped, in a span of class "esc": control and format characters (a
// bidi override such as U+202E would reorder the text), invisible and
// unusual spaces, a space at either end, and bytes that are not UTF-8. Two
// different keys never look the same, and the text read off the page
// names the key's characters. Links and forms carry the key itself.
func keyText(key string) template.HTML {
	var b strings.Builder
	esc := func(s string) {
		b.WriteString(`<span class="esc">`)
		b.WriteString(s)
		b.WriteString(`</span>`)
	}
	for i := 0; i < len(key); {
		r, size := utf8.DecodeRuneInString(key[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			esc(fmt.Sprintf("⟨0x%02X⟩", key[i]))
		case !unicode.IsPrint(r) || (r == ' ' && (i == 0 || i+size == len(key))):
			esc(fmt.Sprintf("⟨U+%04X⟩", r))
		default:
			b.WriteString(template.HTMLEscapeString(key[i : i+size]))
		}
		i += size
	}
	return template.HTML(b.String()) //nolint:gosec // every part is escaped above
}
