package webui

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/taskq/taskq/pkg/client"
)

// The search box takes a run ID (it opens the run), an idempotency key (it
// opens the run that holds it, or lists the runs that had it), or
// field=value (it lists the runs whose input or metadata field has that
// value). Key and field searches are the Inspector's ListRuns filters (Key,
// Where), which read at most client.ListScanMax run records per page.

// search is what a search filters on, beside the task and status.
type search struct {
	// Describe says what is kept, for the page.
	Describe string
	// Key is set for a key search.
	Key string
	// Where is set for a field search.
	Where []string
	// None says the search can keep no run (it names no field).
	None bool
	// Metadata is the same search on the metadata side, offered when a
	// field was named without "input." or "metadata." ("" otherwise).
	Metadata string
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
	var nh *client.StateError
	switch {
	case errors.As(err, &nh) && errors.Is(nh.Kind, client.ErrKeyNotHeld):
		return "", "", nil
	case err != nil:
		return "", "", err
	}
	return k.OwnerRunID, "key", nil
}

// parseSearch turns what lookup did not resolve into a filter: field=value
// when q has that shape, else the runs whose idempotency key is q.
func parseSearch(q string) *search {
	if field, value, ok := strings.Cut(q, "="); ok && fieldPath(field) {
		return fieldSearch(strings.TrimSpace(field), strings.TrimSpace(value))
	}
	return &search{Describe: "idempotency key is " + quote(q), Key: q}
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

// fieldSearch keeps runs whose input (or metadata) field at path equals
// value, as client.ListOptions.Where compares them. "input." and "metadata." (or
// "additional_metadata.") pick the side; without either, the input.
func fieldSearch(path, value string) *search {
	parts := strings.Split(path, ".")
	source, named := client.FieldInput, false
	switch parts[0] {
	case "input":
		parts, named = parts[1:], true
	case "metadata", "additional_metadata":
		source, parts, named = client.FieldMetadata, parts[1:], true
	}
	if len(parts) == 0 {
		return &search{Describe: quote(path) + " names no field", None: true}
	}
	s := &search{
		Describe: source + " field " + quote(strings.Join(parts, ".")) + " is " + quote(value),
		Where:    []string{source + "." + strings.Join(parts, ".") + "=" + value},
	}
	if !named {
		s.Metadata = "metadata." + strings.Join(parts, ".") + "=" + value
	}
	return s
}

// quote quotes s for a sentence of the page (the template escapes it),
// with its control, format (bidi) and other invisible characters escaped
// (\u202e), so that a sentence cannot be reordered or hide a character.
func quote(s string) string { return strconv.Quote(s) }
