package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/fieldfilter"
)

// ErrInvalidListOption matches every *ListOptionError.
var ErrInvalidListOption = errors.New("invalid list option")

// ListOptionError says an option of a list or bulk action (its page size,
// a filter, a time range, a cap) is not valid; Option names it as the
// HTTP API's query parameter does ("limit", "where", "since"). Nothing
// was read or changed.
//
// A bulk action (CancelRuns, RetryRuns) that would act on more runs than
// its Max, or whose filter's window holds more runs than a bulk action
// reads (BulkScanMax), so that how many match is not known, fails with
// one for Option "max" (or "filter", for the window) that errors.Is
// matches with ErrTooManyRuns too; Problem, its message, says how many
// runs match.
type ListOptionError struct {
	Option string
	// Problem says what is wrong, with the limit where one applies.
	Problem string

	tooMany bool // a bulk action's filter matched too many runs
}

// Error is Option and Problem (Problem alone for too many runs).
func (e *ListOptionError) Error() string {
	if e.tooMany {
		return e.Problem // it names the max, or the filter's window
	}
	return e.Option + " " + e.Problem
}

// Is makes errors.Is(err, ErrInvalidListOption) hold, and errors.Is(err,
// ErrTooManyRuns) for a bulk action that matched too many runs.
func (e *ListOptionError) Is(target error) bool {
	return target == ErrInvalidListOption || (e.tooMany && target == ErrTooManyRuns)
}

// WhereMax is the most field filters one listing takes.
const WhereMax = 8

// The sources a ListOptions.Where filter reads.
const (
	// FieldInput is the run's input.
	FieldInput = fieldfilter.Input
	// FieldMetadata is the run's additional metadata.
	FieldMetadata = fieldfilter.Metadata
)

// decodeObject reads a run's input or metadata for the filters; nil when
// it is not a JSON object.
func decodeObject(raw []byte) map[string]any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// filtered reports whether the options keep runs by what their records
// hold (not only by when they were created).
func (o *ListOptions) filtered() bool {
	return o.Task != "" || o.Status != "" || o.Key != "" || len(o.Where) > 0 || o.Scheduled
}

func (o *ListOptions) check() error {
	if o.Status != "" && !o.Status.valid() {
		return &ListOptionError{Option: "status", Problem: fmt.Sprintf("%s is not a status: use queued, running, succeeded, failed or cancelled", strconv.Quote(clipText(string(o.Status))))}
	}
	if len(o.Where) > WhereMax {
		return &ListOptionError{Option: "where", Problem: fmt.Sprintf("has %d filters, over the limit of %d", len(o.Where), WhereMax)}
	}
	o.where = nil
	for _, w := range o.Where {
		f, err := fieldfilter.Parse(w)
		if err != nil {
			return &ListOptionError{Option: "where", Problem: err.Error()}
		}
		o.where = append(o.where, f)
	}
	return checkRange(o.Since, o.Until)
}

func checkRange(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return &ListOptionError{Option: "since", Problem: fmt.Sprintf("%s is not before until %s",
			since.UTC().Format(time.RFC3339Nano), until.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// keeps reports whether run r passes the options' filters.
func (o *ListOptions) keeps(r *engine.Run) bool {
	if r == nil || o.Task != "" && r.Task != o.Task || o.Status != "" && Status(r.Status) != o.Status ||
		o.Key != "" && r.Key != o.Key {
		return false
	}
	if len(o.where) != len(o.Where) && o.check() != nil {
		return false
	}
	var input, meta map[string]any
	for _, f := range o.where {
		doc := &input
		raw := r.Input
		if f.Source == FieldMetadata {
			doc, raw = &meta, r.Meta
		}
		if *doc == nil {
			if *doc = decodeObject(raw); *doc == nil {
				return false
			}
		}
		if !f.Matches(*doc) {
			return false
		}
	}
	return true
}

// window is a time range of an index: where a listing starts (the cursor,
// else just before Until) and the oldest score it keeps.
type window struct {
	pos   *engine.IndexEntry
	since int64 // the oldest score kept; 0: no bound
}

// windowOf starts a listing at the cursor, or else just before until, and
// ends it at since.
func windowOf(pos *engine.IndexEntry, since, until time.Time) window {
	w := window{pos: pos}
	if pos == nil && !until.IsZero() {
		// No entry sorts below an empty ID: the page starts at the
		// entries older than until.
		w.pos = &engine.IndexEntry{Score: until.UnixMilli()}
	}
	if !since.IsZero() {
		w.since = since.UnixMilli()
	}
	return w
}

// cut drops the entries older than the window, and reports whether it
// dropped any (the listing has then ended).
func (w window) cut(es []engine.IndexEntry) ([]engine.IndexEntry, bool) {
	if w.since == 0 {
		return es, false
	}
	for i, e := range es {
		if e.Score < w.since {
			return es[:i], true
		}
	}
	return es, false
}

// valid reports whether s is one of the six statuses.
func (s Status) valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaiting, StatusSucceeded, StatusFailed, StatusCancelled:
		return true
	}
	return false
}
