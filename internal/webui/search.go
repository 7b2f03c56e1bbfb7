package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/taskq/taskq/pkg/client"
)

// The search box takes a run ID (it opens the run), an idempotency key (it
// opens the run that holds it, or lists the newest runs that had it), or
// field=value (it lists the runs whose input or metadata field has that
// value). The Inspector's ListRuns filters by task and status only, so key
// and field searches read the newest runs' records here, at most
// Options.SearchRuns per page, and say how many they looked at.

// runFilter keeps runs of a listing, on top of ListRunsOptions.
type runFilter struct {
	// Describe says what is kept, for the page.
	Describe string
	keep     func(*client.RunInfo) bool
}

// lookup resolves q to the run it names: a run ID, or a key's owner. It
// returns "" and no error when q names neither.
func (u *UI) lookup(ctx context.Context, q string) (runID, via string, err error) {
	if r, err := u.in.GetRun(ctx, q); err == nil {
		return r.ID, "id", nil
	} else if !errors.Is(err, client.ErrRunNotFound) {
		return "", "", err
	}
	k, err := u.in.GetKey(ctx, q)
	var nh *client.KeyNotHeldError
	switch {
	case errors.As(err, &nh):
		return "", "", nil
	case err != nil:
		return "", "", err
	}
	return k.OwnerRunID, "key", nil
}

// parseSearch turns what lookup did not resolve into a filter: field=value
// when q has that shape, else the runs whose idempotency key is q.
func parseSearch(q string) *runFilter {
	if field, value, ok := strings.Cut(q, "="); ok && fieldPath(field) {
		return fieldFilter(strings.TrimSpace(field), strings.TrimSpace(value))
	}
	return &runFilter{Describe: "idempotency key is " + quote(q), keep: func(r *client.RunInfo) bool { return r.IdempotencyKey == q }}
}

// fieldPath reports whether s is a dotted field name (orderId,
// customer.id, input.orderId, metadata.tenant).
func fieldPath(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || strings.IndexFunc(part, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) >= 0 {
			return false
		}
	}
	return true
}

// fieldFilter keeps runs whose input (or metadata) field at path equals
// value: a JSON value (42, true, "x") or, when value is not JSON, a string.
// "input." and "metadata." (or "additional_metadata.") pick one side;
// without either, the input is looked at, then the metadata.
func fieldFilter(path, value string) *runFilter {
	var want any
	if err := json.Unmarshal([]byte(value), &want); err != nil {
		want = value
	}
	sides := []string{"input", "metadata"}
	parts := strings.Split(path, ".")
	switch parts[0] {
	case "input":
		sides, parts = []string{"input"}, parts[1:]
	case "metadata", "additional_metadata":
		sides, parts = []string{"metadata"}, parts[1:]
	}
	if len(parts) == 0 {
		return &runFilter{Describe: quote(path) + " names no field", keep: func(*client.RunInfo) bool { return false }}
	}
	return &runFilter{
		Describe: strings.Join(sides, " or ") + " field " + quote(strings.Join(parts, ".")) + " is " + quote(value),
		keep: func(r *client.RunInfo) bool {
			for _, side := range sides {
				raw := r.Input
				if side == "metadata" {
					raw = r.Metadata
				}
				if got, ok := at(raw, parts); ok && equalJSON(got, want) {
					return true
				}
			}
			return false
		},
	}
}

// at returns the value at path in a JSON object.
func at(raw json.RawMessage, path []string) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// equalJSON compares a value decoded with UseNumber to one decoded without.
func equalJSON(got, want any) bool {
	switch g := got.(type) {
	case json.Number:
		w, ok := want.(float64)
		f, err := g.Float64()
		if s, isStr := want.(string); isStr {
			return s == g.String() // orderId=42 also finds "orderId": 42 when typed as text
		}
		return ok && err == nil && f == w
	case string:
		w, ok := want.(string)
		if !ok {
			if f, isNum := want.(float64); isNum {
				b, _ := json.Marshal(f)
				return string(b) == g // id=42 finds "id": "42"
			}
			if b, isBool := want.(bool); isBool {
				return (b && g == "true") || (!b && g == "false")
			}
		}
		return ok && g == w
	case bool:
		w, ok := want.(bool)
		return ok && g == w
	case nil:
		return want == nil
	}
	return false
}

// filteredPage is a page of a listing read with a filter.
type filteredPage struct {
	Runs       []*client.RunInfo
	NextCursor string
	// Looked is how many runs were read to fill the page.
	Looked int
}

// listFiltered reads the listing o from its cursor in pages of pageSize,
// keeping what f keeps, until pageSize runs are kept or SearchRuns runs
// were looked at. A cursor can only name the end of a listing's page, so
// the last page read is kept whole: a page holds fewer than 2*pageSize runs.
func (u *UI) listFiltered(ctx context.Context, o client.ListRunsOptions, f *runFilter, pageSize int) (*filteredPage, error) {
	fp := &filteredPage{}
	for fp.Looked < u.opts.SearchRuns && len(fp.Runs) < pageSize {
		o.Limit = min(pageSize, u.opts.SearchRuns-fp.Looked)
		page, err := u.in.ListRuns(ctx, o)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			if f.keep(r) {
				fp.Runs = append(fp.Runs, r)
			}
		}
		fp.Looked += len(page.Runs)
		if fp.NextCursor = page.NextCursor; fp.NextCursor == "" {
			break
		}
		o.Cursor = fp.NextCursor
	}
	return fp, nil
}

// quote quotes s for a sentence of the page (the template escapes it).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
