package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// ANSI colours. Every colour code has the same length, so a column whose
// cells are all coloured stays aligned in a tabwriter.
const (
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiBlue    = "\x1b[34m"
	ansiDefault = "\x1b[39m"
	ansiReset   = "\x1b[0m"
)

// printer writes command output as a table or as JSON.
type printer struct {
	w      io.Writer
	format string
	color  bool
}

func (p *printer) json() bool { return p.format == formatJSON }

// JSON writes v indented, without HTML escaping (keys often hold '<' or '&').
func (p *printer) JSON(v any) error {
	enc := json.NewEncoder(p.w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Table writes rows under a header with aligned columns. Every cell is
// printed through clean, so a key or value holding a newline, a tab or an
// escape sequence stays in its cell; a STATUS or OUTCOME column is
// coloured on a terminal.
func (p *printer) Table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	coloured := make([]bool, len(header))
	for i, h := range header {
		coloured[i] = h == "STATUS" || h == "OUTCOME"
	}
	line := make([]string, 0, len(header))
	write := func(cells []string, header bool) {
		line = line[:0]
		for i, c := range cells {
			c = clean(c)
			if !header && i < len(coloured) && coloured[i] {
				c = p.status(c)
			}
			line = append(line, c)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	write(header, true)
	for _, r := range rows {
		write(r, false)
	}
	return tw.Flush()
}

// Fields writes one record as aligned "Name: value" lines; empty values
// are left out. Values are printed through clean, and a Status or Outcome
// is coloured on a terminal.
func (p *printer) Fields(fields [][2]string) error {
	tw := tabwriter.NewWriter(p.w, 0, 0, 1, ' ', 0)
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		v := clean(f[1])
		if f[0] == "Status" || f[0] == "Outcome" {
			v = p.status(v)
		}
		fmt.Fprintf(tw, "%s:\t%s\n", clean(f[0]), v)
	}
	return tw.Flush()
}

// status colours a run status (or an event outcome) on a terminal.
func (p *printer) status(s string) string {
	if !p.color {
		return s
	}
	c := ansiDefault
	switch s {
	case "succeeded", "created":
		c = ansiGreen
	case "failed", "error":
		c = ansiRed
	case "running", "deduplicated", "debounced", "attached", "signalled":
		c = ansiYellow
	case "queued":
		c = ansiBlue
	}
	return c + s + ansiReset
}

// clean makes s safe to print on one line of a terminal: control
// characters (newlines, tabs and escape sequences included), other runes
// that do not print (bidirectional overrides, zero-width and non-ASCII
// spaces) and bytes that are not UTF-8 are shown as Go escapes (\n, \x1b,
// \u202e, \xff). Everything else, backslashes included, is left as it is,
// so ordinary text reads the same. -o json carries exact values.
func clean(s string) string { return escapeUnsafe(s, false) }

// cleanLines is clean for text of several lines: newlines and tabs stay.
func cleanLines(s string) string { return escapeUnsafe(s, true) }

func escapeUnsafe(s string, lines bool) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !printable(r, size, lines) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r, size, lines):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func printable(r rune, size int, lines bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return false
	case lines && (r == '\n' || r == '\t'):
		return true
	}
	return strconv.IsPrint(r)
}

// orDash shows an absent value as "-" so table columns stay readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timeLayout is fixed-width so table columns line up.
const timeLayout = "2006-01-02 15:04:05"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(timeLayout)
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return formatTime(*t)
}

// utcPtr returns t in UTC, for JSON output that does not depend on the
// operator's time zone.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// formatDuration prints a duration the way people write one: 10m, 1h30m,
// 4m59s, 250ms.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// compactJSON returns raw JSON on one line, for table cells.
func compactJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// progress reports how far a long operation got, on a terminal only: a
// single line rewritten in place at most ten times a second, erased when
// done. Piped output never sees it.
type progress struct {
	w     io.Writer // nil when quiet
	label string
	total int

	mu    sync.Mutex
	last  time.Time
	n     int
	shown bool
}

// newProgress returns a reporter writing to stderr when it is a terminal.
func (a *app) newProgress(label string, total int) *progress {
	p := &progress{label: label, total: total}
	if a.stderrTTY {
		p.w = a.stderr
	}
	return p
}

// Add counts n more items done.
func (p *progress) Add(n int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || (p.total > 0 && p.n >= p.total) {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s %d/%d", p.label, p.n, p.total)
	} else {
		fmt.Fprintf(p.w, "\r\x1b[K%s %d", p.label, p.n)
	}
	p.shown = true
}

// Done erases the progress line.
func (p *progress) Done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
