package client

import (
	"context"
)

// CountRunsMax bounds the runs one CountRuns call counts: the newest of
// its window.
const CountRunsMax = ListScanMax

// RunCounts counts runs by task and status.
type RunCounts struct {
	// Tasks maps a task's name to how many of its runs are in each status
	// (a status with no runs is left out).
	Tasks map[string]map[Status]int `json:"tasks"`
	// Counted is how many runs were counted.
	Counted int `json:"counted"`
	// Truncated says the count stopped at CountRunsMax runs: older runs
	// of the window were not counted.
	Truncated bool `json:"truncated"`
}

// CountRuns counts the runs of the namespace by task and status, newest
// first, up to CountRunsMax runs (a window given by Since and Until
// narrows what is counted). It reads only each record's task and status.
// Runs whose records expired after their retention are not counted.
func (in *Inspector) CountRuns(ctx context.Context, o ListOptions) (*RunCounts, error) {
	if err := checkRange(o.Since, o.Until); err != nil {
		return nil, err
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	out := &RunCounts{Tasks: map[string]map[Status]int{}}
	w := windowOf(nil, o.Since, o.Until)
	pos := w.pos
	for looked := 0; ; {
		if looked >= CountRunsMax {
			// Truncated only if a run of the window is left uncounted.
			es, err := in.c.store.PageRuns(ctx, pos, 1)
			if err != nil {
				return nil, in.c.unavailable(ctx, err)
			}
			es, _ = w.cut(es)
			out.Truncated = len(es) > 0
			return out, nil
		}
		size := min(ListLimitMax, CountRunsMax-looked)
		es, err := in.c.store.PageRuns(ctx, pos, size)
		if err != nil {
			return nil, in.c.unavailable(ctx, err)
		}
		ended := len(es) < size
		es, cut := w.cut(es)
		if len(es) == 0 {
			return out, nil
		}
		sts, err := in.c.store.RunTaskStatuses(ctx, entryIDs(es))
		if err != nil {
			return nil, in.c.unavailable(ctx, err)
		}
		for _, st := range sts {
			if st.Task == "" {
				continue // expired
			}
			m := out.Tasks[st.Task]
			if m == nil {
				m = map[Status]int{}
				out.Tasks[st.Task] = m
			}
			m[Status(st.Status)]++
			out.Counted++
		}
		looked += len(es)
		pos = &es[len(es)-1]
		if ended || cut {
			return out, nil
		}
	}
}
