// Package cronspec parses the cron expression of a schedule (task.Schedule's
// Cron, TimeZone and Seconds) and gives its ticks. Package task checks a
// schedule with it; internal/ticks compiles one for the scheduler.
package cronspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec is a parsed cron expression in its zone. It is immutable and safe
// for concurrent use.
type Spec struct {
	loc   *time.Location
	spec  cron.Schedule // nil for @every
	every time.Duration
}

// Error says which field of a schedule is wrong ("timezone" or "cron"),
// and what is wrong with it.
type Error struct {
	Field   string
	Message string
	// Err is the parser's or the time zone database's error, if any.
	Err error
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func bad(field, msg string, err error) error { return &Error{Field: field, Message: msg, Err: err} }

// Parse reads expr in zone (UTC when empty): a standard 5-field expression
// (6 with seconds, seconds first), a descriptor (@daily) or "@every
// <duration>", optionally after "CRON_TZ=<zone> " (or "TZ="), which must
// then be zone when zone is given. Every failure is an *Error.
func Parse(expr, zone string, seconds bool) (*Spec, error) {
	expr = strings.TrimSpace(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(expr, prefix)
		if !ok {
			continue
		}
		inline, spec, _ := strings.Cut(rest, " ")
		if zone != "" && zone != inline {
			return nil, bad("timezone", fmt.Sprintf("%q differs from the expression's %s%s", zone, prefix, inline), nil)
		}
		zone, expr = inline, strings.TrimSpace(spec)
	}
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil || zone == "Local" {
			return nil, bad("timezone", fmt.Sprintf("%q is not an IANA time zone", zone), err)
		}
	}
	if expr == "" {
		return nil, bad("cron", "is empty", nil)
	}
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		every, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || every < time.Second || every%time.Second != 0 {
			return nil, bad("cron", fmt.Sprintf("%q: @every takes a whole number of seconds, at least 1s", expr), err)
		}
		return &Spec{loc: loc, every: every}, nil
	}
	opts := cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor
	if seconds {
		opts |= cron.Second
	}
	spec, err := cron.NewParser(opts).Parse(expr)
	if err != nil {
		return nil, bad("cron", fmt.Sprintf("%q: %v", expr, err), err)
	}
	ss, ok := spec.(*cron.SpecSchedule)
	if !ok {
		return nil, bad("cron", fmt.Sprintf("%q is not a cron expression", expr), nil)
	}
	// The parser reads the fields in time.Local unless told otherwise; a
	// schedule's zone is its own, the same on every scheduler.
	ss.Location = loc
	if ss.Next(time.Now()).IsZero() {
		return nil, bad("cron", fmt.Sprintf("%q has no tick in the next five years", expr), nil)
	}
	return &Spec{loc: loc, spec: ss}, nil
}

// Next returns the first tick strictly after t, in the spec's zone (the
// zero time when there is none within five years). The ticks of "@every
// d" fall on whole multiples of d since the Unix epoch, so every
// scheduler agrees on them.
func (s *Spec) Next(t time.Time) time.Time {
	if s.spec == nil {
		n := t.UnixNano()
		d := int64(s.every)
		next := n - n%d + d
		if n < 0 && n%d != 0 {
			next -= d
		}
		return time.Unix(0, next).In(s.loc)
	}
	return s.spec.Next(t.In(s.loc))
}
