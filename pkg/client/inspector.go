package client

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/fieldfilter"
	"github.com/taskq/taskq/pkg/task"
)

// Page sizes of the Inspector's lists.
const (
	// ListLimitDefault is the page size when a list's Limit is 0.
	ListLimitDefault = 50
	// ListLimitMax is the largest page a list returns.
	ListLimitMax = 1000
	// ListScanMax bounds how many index entries one ListRuns call looks
	// at when it filters by task or status: a page may come back short
	// (even empty) with a NextCursor to go on from.
	ListScanMax = 10 * ListLimitMax
)

// ErrInvalidCursor matches a cursor that no list returned.
var ErrInvalidCursor = engine.ErrInvalidCursor

// ErrKeyOwnerChanged is the Kind of a *StateError saying an owner-fenced
// release found the key held by another run than the one named.
var ErrKeyOwnerChanged = errors.New("idempotency key owner changed")

// Inspector reads what a namespace holds — runs, idempotency keys, events
// and registered tasks — and acts on it: cancels runs, releases keys,
// sends signals. The command line, the HTTP API and dashboards are built on
// it; nothing else of taskq reaches storage. It is safe for concurrent use,
// and every call is bounded by the client's OperationTimeout.
type Inspector struct {
	c *Client
}

// Inspector returns the inspector of the client's namespace.
func (c *Client) Inspector() *Inspector { return &Inspector{c: c} }

// --- runs -------------------------------------------------------------------

// ListOptions select what a listing of the Inspector returns, a page at a
// time: runs (ListRuns, and the bulk actions' filter), keys
// (ListKeys), events (ListEvents), suppressed triggers (ListSuppressed), a
// run's signals and steps (RunSignals, RunSteps, which read only Cursor
// and Limit) and counts of runs (CountRuns, which reads only Since and
// Until). Each listing reads the fields it names and ignores the others;
// every filter given must hold.
type ListOptions struct {
	// Task and Status keep only the runs of this task and in this status
	// ("" keeps all); for ListKeys, the keys whose owner is such a run (a
	// key whose owner's record has expired has neither).
	Task   string
	Status Status
	// Key keeps only the runs, or the suppressed triggers, of this
	// idempotency key (exact), or for ListEvents the events of this event
	// key ("" keeps all).
	Key string
	// Match keeps the keys matching this glob, for ListKeys (Redis MATCH
	// syntax: * ? [abc]); "" keeps all.
	Match string
	// Owner keeps the suppressed triggers refused for this owner run only.
	Owner string
	// Since and Until keep the runs (or events) created at or after Since
	// and before Until (zero: no bound). They are applied to the index, so
	// they cost no reads of records.
	Since, Until time.Time
	// Where keeps the runs whose input or metadata fields have the values
	// given, each written "input.<path>=<value>" or
	// "metadata.<path>=<value>" (at most WhereMax), as "input.customer=42"
	// or "metadata.source=web": the path's object keys joined by dots, the
	// value everything after the first "=" (it may be empty). A string
	// field matches its text; a number matches a value that is the same
	// number (42 matches 42.0); true, false and null match their JSON. A
	// value in double quotes ("\"42\"") matches only a string field with
	// the quoted text. Objects and arrays never match. A filter written
	// otherwise is a *ListOptionError for "where".
	Where []string
	// Scheduled keeps only the runs waiting for the time they were
	// scheduled at (RunAt, RunIn): queued, with RunInfo.Scheduled (a run a
	// rate limit deferred is not one).
	Scheduled bool
	// Cursor continues a listing where the page that returned it ended
	// ("" starts from the newest, or from Until). A cursor goes with the
	// listing and the filters it was returned for.
	Cursor string
	// Limit is the most items one page holds (default ListLimitDefault,
	// at most ListLimitMax). For ListKeys it is how many keys one page
	// asks Redis to look at: keys are found with SCAN on every master in
	// turn (every partition's keys at once), so a page may hold a few more
	// or fewer (even none, with a NextCursor), a key held throughout the
	// listing is listed at least once, and the listing ends when
	// NextCursor is "".
	Limit int

	where []fieldfilter.Filter // Where, parsed by check
}

// Page is one page of a listing (runs, run IDs, keys, events, signals,
// steps, suppressed triggers), in the listing's order.
type Page[T any] struct {
	Items []T `json:"items"`
	// NextCursor continues the listing; "" when it has ended.
	NextCursor string `json:"nextCursor,omitempty"`
}

// GetRun reads one run, or fails with an error matching ErrRunNotFound.
// A queued run waiting for a retry, a debounce window or its scheduled
// time has ScheduledAt (and Scheduled for the last). It also has its
// attempts (Attempts) and the counts of its signals and durable steps
// (RunSignals and RunSteps list them): one more round trip for a run with
// an attempt history, signals or steps. It has its concurrency groups
// (ConcurrencyGroups), derived from its input by its task's registered
// definition, and a workflow's run its DAG (Workflow): one more read for a
// run with steps, the registered one for a run that has not begun.
func (in *Inspector) GetRun(ctx context.Context, runID string) (*RunInfo, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	runs, due, err := in.c.store.GetRuns(ctx, []string{runID})
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	if runs[0] == nil {
		return nil, fmt.Errorf("%w: %s", ErrRunNotFound, runID)
	}
	info := inspected(runs[0], due[0])
	if err := in.withParts(ctx, info, runs[0]); err != nil {
		return nil, err
	}
	return info, nil
}

func inspected(r *engine.Run, due time.Time) *RunInfo {
	info := runInfo(r)
	info.ScheduledAt = optTime(due)
	// Waiting in the retry set before any attempt: a run scheduled with
	// RunAt or RunIn, unless its debounce window or a rate limit that
	// deferred it (Waiting) is what it waits for.
	info.Scheduled = !due.IsZero() && info.Status == StatusQueued && r.Attempt == 0 && r.Fails == 0 &&
		r.Strategy != engine.StrategyDebounce && info.Waiting == ""
	return info
}

// ListRuns returns a page of runs, newest first (runs created in the same
// millisecond by ID, descending), merged from every partition: the order,
// and so the pages, are the same whatever the namespace's partition count.
// A cursor names the last run of its page, so a listing walked page by page
// while runs are added lists every run that existed when it started once,
// and none twice. With a Task, Status, Key or Where filter it reads no more
// than ListScanMax run records per call, so a page may hold fewer than
// Limit runs and still have a NextCursor (Scheduled filters so too). Runs
// whose records expired after their retention are left out.
func (in *Inspector) ListRuns(ctx context.Context, o ListOptions) (*Page[*RunInfo], error) {
	limit, pos, err := pageStart(o.Limit, o.Cursor)
	if err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	page := &Page[*RunInfo]{Items: []*RunInfo{}}
	next, err := in.scanRuns(ctx, &o, pos, limit, ListScanMax, func(r *RunInfo) bool {
		page.Items = append(page.Items, r)
		return len(page.Items) < limit
	})
	if err != nil {
		return nil, err
	}
	page.NextCursor = next
	return page, nil
}

// scanRuns walks the runs from pos (nil: the newest, or Until), newest
// first, reading at most budget records, and calls keep with each run that
// passes o's filters until it returns false. It returns the cursor of the
// run looked at last, or "" once the runs (or the window) have ended.
// Pages of size are read at a time (more when filtering: most records may
// not pass).
func (in *Inspector) scanRuns(ctx context.Context, o *ListOptions, pos *engine.IndexEntry, size, budget int, keep func(*RunInfo) bool) (string, error) {
	w := windowOf(pos, o.Since, o.Until)
	pos = w.pos
	if o.filtered() {
		size = min(max(size, 100), ListLimitMax)
	}
	for looked := 0; looked < budget; {
		es, err := in.c.store.PageRuns(ctx, pos, min(size, budget-looked))
		if err != nil {
			return "", in.c.unavailable(ctx, err)
		}
		ended := len(es) < min(size, budget-looked)
		es, cut := w.cut(es)
		if ended = ended || cut; len(es) == 0 {
			return "", nil
		}
		runs, due, err := in.c.store.GetRuns(ctx, entryIDs(es))
		if err != nil {
			return "", in.c.unavailable(ctx, err)
		}
		for i, r := range runs {
			pos, looked = &es[i], looked+1
			if !o.keeps(r) {
				continue
			}
			if info := inspected(r, due[i]); (!o.Scheduled || info.Scheduled) && !keep(info) {
				if ended && i == len(es)-1 {
					return "", nil
				}
				return encodeCursor(pos), nil
			}
		}
		if ended {
			return "", nil
		}
	}
	return encodeCursor(pos), nil
}

// --- keys -------------------------------------------------------------------

// GetKey says who holds key now, or fails with a *StateError of Kind
// ErrKeyNotHeld.
func (in *Inspector) GetKey(ctx context.Context, key string) (*KeyInfo, error) {
	return in.c.lookupKey(ctx, key)
}

// ListKeys returns a page of the held idempotency keys with their owners.
// A key released between finding it and reading it is left out, and so is
// one whose owner does not pass the Task and Status filters: a filtered
// page may hold fewer keys (even none) and still have a NextCursor.
func (in *Inspector) ListKeys(ctx context.Context, o ListOptions) (*Page[*KeyInfo], error) {
	limit, err := pageLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	if o.Status != "" && !o.Status.valid() {
		return nil, (&ListOptions{Status: o.Status}).check()
	}
	sctx, cancel := in.c.opCtx(ctx)
	names, next, err := in.c.store.ScanKeys(sctx, o.Match, o.Cursor, int64(limit))
	cancel()
	if errors.Is(err, engine.ErrInvalidCursor) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, o.Cursor)
	}
	if err != nil {
		return nil, in.c.unavailable(sctx, err)
	}
	page := &Page[*KeyInfo]{Items: []*KeyInfo{}, NextCursor: next}
	seen := map[string]bool{}
	uniq := names[:0]
	for _, k := range names {
		if !seen[k] { // SCAN may return a key twice
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	ctx, cancel = in.c.opCtx(ctx)
	defer cancel()
	states, held, err := in.c.store.GetKeys(ctx, uniq)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	owners := make([]string, 0, len(uniq))
	for i, ks := range states {
		if held[i] {
			owners = append(owners, ks.Owner)
		}
	}
	runs, _, err := in.c.store.GetRuns(ctx, owners)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	for i, ks := range states {
		if !held[i] {
			continue // released since the scan
		}
		k := in.c.keyInfo(ks, runs[0])
		runs = runs[1:]
		if (o.Task == "" || k.Task == o.Task) && (o.Status == "" || k.OwnerStatus == o.Status) {
			page.Items = append(page.Items, k)
		}
	}
	return page, nil
}

// ReleaseKey frees key so that the next trigger with it creates a run. It
// is fenced by owner: the key is released only while that run holds it,
// else it fails with a *StateError of Kind ErrKeyOwnerChanged. With owner "" it releases the
// key from whichever run holds it now. It returns the run the key was
// released from, and fails with Kind ErrKeyNotHeld when nobody holds it. The
// run itself is not touched.
func (in *Inspector) ReleaseKey(ctx context.Context, key, owner string) (string, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	if owner == "" {
		ks, held, err := in.c.store.GetKey(ctx, key)
		if err != nil {
			return "", in.c.unavailable(ctx, err)
		}
		if !held {
			return "", &StateError{Kind: ErrKeyNotHeld, Key: key}
		}
		owner = ks.Owner
	}
	released, err := in.c.store.ReleaseKey(ctx, key, owner)
	if err != nil {
		return "", in.c.unavailable(ctx, err)
	}
	if released {
		return owner, nil
	}
	now, _, err := in.c.store.GetKey(ctx, key)
	if err != nil {
		return "", in.c.unavailable(ctx, err)
	}
	return "", &StateError{Kind: ErrKeyOwnerChanged, Key: key, Expected: owner, Current: now.Owner}
}

// --- tasks ------------------------------------------------------------------

// ListTasks lists the task definitions workers have registered, by name.
func (in *Inspector) ListTasks(ctx context.Context) ([]task.Registered, error) {
	return in.c.tasks(ctx)
}

// GetTask returns the registration of one task, or an error matching
// ErrTaskNotFound.
func (in *Inspector) GetTask(ctx context.Context, name string) (*task.Registered, error) {
	return in.c.registeredTask(ctx, name)
}

// --- cursors and limits -------------------------------------------------------

// pageStart checks a listing's page size and cursor.
func pageStart(limit int, cursor string) (int, *engine.IndexEntry, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return 0, nil, err
	}
	pos, err := decodeCursor(cursor)
	return limit, pos, err
}

// indexPage reads a page of limit entries with read, cut to the window,
// and the cursor of the next page ("" once a page comes back short or
// reaches the window's start: the listing has ended).
func (in *Inspector) indexPage(ctx context.Context, read func(context.Context) ([]engine.IndexEntry, error), limit int, w window) ([]engine.IndexEntry, string, error) {
	es, err := read(ctx)
	if err != nil {
		return nil, "", in.c.unavailable(ctx, err)
	}
	es, cut := w.cut(es)
	next := ""
	if len(es) == limit && !cut {
		next = encodeCursor(&es[len(es)-1])
	}
	return es, next, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, &ListOptionError{Option: "limit", Problem: fmt.Sprintf("%d must not be negative", n)}
	case n == 0:
		return ListLimitDefault, nil
	case n > ListLimitMax:
		return 0, &ListOptionError{Option: "limit", Problem: fmt.Sprintf("%d is over the maximum of %d", n, ListLimitMax)}
	}
	return n, nil
}

func entryIDs(es []engine.IndexEntry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

// A cursor names the last entry of a page (its score and ID), so a
// listing goes on from there however many entries were added since.
func encodeCursor(e *engine.IndexEntry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(e.Score, 10) + ":" + e.ID))
}

func decodeCursor(s string) (*engine.IndexEntry, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		score, id, ok := strings.Cut(string(raw), ":")
		if n, perr := strconv.ParseInt(score, 10, 64); ok && perr == nil && id != "" {
			return &engine.IndexEntry{ID: id, Score: n}, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, s)
}
