package webui

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// statuses are the run statuses in the order the dashboard shows them.
func statuses() []client.Status {
	return []client.Status{client.StatusQueued, client.StatusRunning, client.StatusSucceeded, client.StatusFailed, client.StatusCancelled}
}

// taskCounts are one task's runs among those the overview counted.
type taskCounts struct {
	Task       string
	Registered bool
	Expression string
	Strategy   string
	ByStatus   map[client.Status]int
	Total      int
	// Runs that ended in the last hour, by how they ended.
	HourSucceeded, HourFailed, HourCancelled int
}

// Throughput is the runs that ended in the last hour.
func (t *taskCounts) Throughput() int { return t.HourSucceeded + t.HourFailed + t.HourCancelled }

// FailureRate is the share of the last hour's ended runs that failed, as
// text ("-" when none ended).
func (t *taskCounts) FailureRate() string {
	n := t.Throughput()
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(t.HourFailed)/float64(n))
}

// overviewData is the overview page: per task, counts by status and the
// last hour's throughput, counted from the newest runs. The Inspector has
// no counters, so the overview reads run records; Limit bounds how many,
// and Capped says when older runs were left uncounted.
type overviewData struct {
	Tasks    []*taskCounts
	Statuses []client.Status
	Counted  int
	Limit    int
	Capped   bool
	// Oldest is the creation time of the oldest run counted.
	Oldest time.Time
}

func (u *UI) countRuns(ctx context.Context) (*overviewData, error) {
	d := &overviewData{Statuses: statuses(), Limit: u.opts.OverviewRuns}
	by := map[string]*taskCounts{}
	get := func(name string) *taskCounts {
		t, ok := by[name]
		if !ok {
			t = &taskCounts{Task: name, ByStatus: map[client.Status]int{}}
			by[name] = t
		}
		return t
	}
	tasks, err := u.in.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range tasks {
		t := get(r.Spec.Name)
		t.Registered, t.Expression, t.Strategy = true, r.Spec.Expression, string(r.Spec.Strategy)
	}
	hourAgo := u.opts.Clock.Now().Add(-time.Hour)
	cursor := ""
	for d.Counted < d.Limit {
		page, err := u.in.ListRuns(ctx, client.ListRunsOptions{Cursor: cursor, Limit: min(client.ListLimitMax, d.Limit-d.Counted)})
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			t := get(r.Task)
			t.ByStatus[r.Status]++
			t.Total++
			if r.FinishedAt != nil && r.FinishedAt.After(hourAgo) {
				switch r.Status {
				case client.StatusSucceeded:
					t.HourSucceeded++
				case client.StatusFailed:
					t.HourFailed++
				case client.StatusCancelled:
					t.HourCancelled++
				}
			}
			d.Oldest = r.CreatedAt
		}
		d.Counted += len(page.Runs)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	d.Capped = cursor != ""
	for _, t := range by {
		d.Tasks = append(d.Tasks, t)
	}
	slices.SortFunc(d.Tasks, func(a, b *taskCounts) int {
		switch {
		case a.Task < b.Task:
			return -1
		case a.Task > b.Task:
			return 1
		}
		return 0
	})
	return d, nil
}
