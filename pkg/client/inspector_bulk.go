package client

import (
	"context"
	"errors"
	"fmt"
)

// Bounds of the Inspector's bulk actions.
const (
	// BulkMaxDefault is a bulk action's Max when it is 0.
	BulkMaxDefault = 100
	// BulkMaxMax is the largest Max a bulk action takes.
	BulkMaxMax = 1000
	// BulkScanMax bounds the run records one bulk action reads to find
	// the runs it acts on: the newest of the filter's window.
	BulkScanMax = ListScanMax
)

// ErrTooManyRuns matches the *ListOptionError of a bulk action that
// refused to act, and did nothing: more runs match its filter than its
// Max, or its filter's window holds more runs than a bulk action reads
// (BulkScanMax), so that how many match is not known.
var ErrTooManyRuns = errors.New("too many runs for a bulk action")

// tooManyRuns is the error of a bulk action that found matched runs of its
// filter, more than max, or (truncated) stopped reading at BulkScanMax
// before the window's end, so that matched is a lower bound.
func tooManyRuns(matched, max int, truncated bool) *ListOptionError {
	e := &ListOptionError{Option: "max", tooMany: true}
	switch {
	case matched > max && truncated:
		e.Problem = fmt.Sprintf("at least %d runs match, more than the max of %d; narrow the filter (since, until) or raise max (up to %d)", matched, max, BulkMaxMax)
	case matched > max:
		e.Problem = fmt.Sprintf("%d runs match, more than the max of %d; narrow the filter or raise max (up to %d)", matched, max, BulkMaxMax)
	default:
		e.Option = "filter"
		e.Problem = fmt.Sprintf("the filter's window holds more than the %d runs a bulk action reads (%d of them match); narrow it with since and until", BulkScanMax, matched)
	}
	return e
}

// BulkOptions select the runs of a bulk action and bound it.
type BulkOptions struct {
	// Filter selects the runs as ListRuns does; its Cursor and Limit must
	// be empty. The action applies to those of them it can act on: not
	// ended (cancel), failed or cancelled and not retried yet (retry).
	Filter ListOptions
	// DryRun counts the runs the action would apply to and does nothing.
	// It is not refused for Max.
	DryRun bool
	// Max refuses the action, doing nothing, when more runs match
	// (default BulkMaxDefault, at most BulkMaxMax).
	Max int
}

// BulkResult is what a bulk action found and did.
type BulkResult struct {
	// Matched counts the runs the action applies to.
	Matched int  `json:"matched"`
	DryRun  bool `json:"dryRun"`
	// Truncated (a dry run only) says the runs read stopped at BulkScanMax
	// before the window's end: more may match.
	Truncated bool `json:"truncated"`
	// Done counts the runs the action took effect on.
	Done int `json:"done"`
	// Runs has one entry per run acted on, newest first (none on a dry
	// run).
	Runs []BulkRun `json:"runs"`
}

// BulkRun is what a bulk action did to one run.
type BulkRun struct {
	RunID string `json:"runId"`
	// Status is the run's status after the action.
	Status Status `json:"status,omitempty"`
	// RetryRunID is the run a retry created.
	RetryRunID string `json:"retryRunId,omitempty"`
	// Error says why the action did not take effect on this run.
	Error string `json:"error,omitempty"`
	// Err is that error, to match with errors.Is and errors.As.
	Err error `json:"-"`
}

func (o *BulkOptions) check() (int, error) {
	if o.Filter.Cursor != "" || o.Filter.Limit != 0 {
		return 0, &ListOptionError{Option: "filter", Problem: "of a bulk action takes no cursor and no limit"}
	}
	switch {
	case o.Max < 0:
		return 0, &ListOptionError{Option: "max", Problem: fmt.Sprintf("%d must not be negative", o.Max)}
	case o.Max == 0:
		return BulkMaxDefault, o.Filter.check()
	case o.Max > BulkMaxMax:
		return 0, &ListOptionError{Option: "max", Problem: fmt.Sprintf("%d is over the limit of %d", o.Max, BulkMaxMax)}
	}
	return o.Max, o.Filter.check()
}

// bulk finds the runs of o that applies holds for and, unless it is a dry
// run or too many match, calls act on each in turn.
func (in *Inspector) bulk(ctx context.Context, o BulkOptions, applies func(*RunInfo) bool, act func(*RunInfo) BulkRun) (*BulkResult, error) {
	limit, err := o.check()
	if err != nil {
		return nil, err
	}
	var found []*RunInfo
	sctx, cancel := in.c.opCtx(ctx)
	next, err := in.scanRuns(sctx, &o.Filter, nil, ListLimitMax, BulkScanMax, func(r *RunInfo) bool {
		if applies(r) {
			found = append(found, r)
		}
		return true
	})
	cancel()
	if err != nil {
		return nil, err
	}
	res := &BulkResult{Matched: len(found), DryRun: o.DryRun, Truncated: next != "", Runs: []BulkRun{}}
	if o.DryRun {
		return res, nil
	}
	if len(found) > limit || next != "" {
		return nil, tooManyRuns(len(found), limit, next != "")
	}
	for _, r := range found {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		br := act(r)
		if br.Err == nil {
			res.Done++
		} else {
			br.Error = br.Err.Error()
		}
		res.Runs = append(res.Runs, br)
	}
	return res, nil
}

// CancelRuns cancels the runs of a filter that have not ended, one after
// the other, or counts them (DryRun). More than Max of them (or a window
// too large to read, see BulkScanMax) fail it with a *ListOptionError
// matching ErrTooManyRuns, and nothing is cancelled. A run that ended
// meanwhile is listed with its status and not counted as done.
func (in *Inspector) CancelRuns(ctx context.Context, o BulkOptions) (*BulkResult, error) {
	return in.bulk(ctx, o, func(r *RunInfo) bool { return !r.Status.Terminal() }, func(r *RunInfo) BulkRun {
		st, err := in.c.cancel(ctx, r.ID)
		if err == nil && st != StatusCancelled {
			err = fmt.Errorf("client: run %s had already ended: %s", r.ID, st)
		}
		return BulkRun{RunID: r.ID, Status: st, Err: err}
	})
}

// RetryRuns retries the failed and cancelled runs of a filter that were
// not retried yet, one after the other (see RetryRun), or counts them
// (DryRun). More than Max of them fail it with a *ListOptionError
// matching ErrTooManyRuns, and nothing is retried. A retry that fails (a
// held key: an *IdempotencyCollisionError) is listed with its error and
// the others go on.
func (in *Inspector) RetryRuns(ctx context.Context, o BulkOptions) (*BulkResult, error) {
	return in.bulk(ctx, o, (*RunInfo).retryable, func(r *RunInfo) BulkRun {
		h, err := in.RetryRun(ctx, r.ID)
		br := BulkRun{RunID: r.ID, Status: r.Status, Err: err}
		if h != nil && err == nil {
			br.RetryRunID = h.ID()
		}
		return br
	})
}
