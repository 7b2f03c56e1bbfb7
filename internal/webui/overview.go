package webui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// statuses are the run statuses in the order the dashboard shows them.
func statuses() []client.Status {
	return []client.Status{client.StatusQueued, client.StatusRunning, client.StatusWaiting, client.StatusSucceeded, client.StatusFailed,
		client.StatusCancelled}
}

// taskCounts are one task's runs, as Inspector.CountRuns counted them.
type taskCounts struct {
	Task       string
	Registered bool
	Expression string
	Strategy   string
	ByStatus   map[client.Status]int
	// Hour counts the runs created in the last hour, by status.
	Hour map[client.Status]int
}

// HourCreated is how many runs were created in the last hour.
func (t *taskCounts) HourCreated() int {
	n := 0
	for _, c := range t.Hour {
		n += c
	}
	return n
}

// FailureRate is the share of the runs created in the last hour that have
// ended and failed, as text ("-" when none ended).
func (t *taskCounts) FailureRate() string {
	ended := t.Hour[client.StatusSucceeded] + t.Hour[client.StatusFailed] + t.Hour[client.StatusCancelled]
	if ended == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(t.Hour[client.StatusFailed])/float64(ended))
}

// overviewData is the overview page: per task, its runs by status and its
// last hour, counted by the Inspector (CountRuns reads each record's task
// and status only, the newest client.CountRunsMax runs at most).
type overviewData struct {
	Tasks    []*taskCounts
	Statuses []client.Status
	Counted  int
	Max      int
	// Truncated says older runs were left uncounted.
	Truncated bool
	// Queues are each task's queue counts; Charts the run statistics of
	// every task.
	Queues []client.QueueStat
	Charts *statsCharts
}

func (u *UI) countRuns(ctx context.Context) (*overviewData, error) {
	d := &overviewData{Statuses: statuses(), Max: client.CountRunsMax}
	by := map[string]*taskCounts{}
	get := func(name string) *taskCounts {
		t, ok := by[name]
		if !ok {
			t = &taskCounts{Task: name, ByStatus: map[client.Status]int{}, Hour: map[client.Status]int{}}
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
	all, err := u.in.CountRuns(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	for name, m := range all.Tasks {
		get(name).ByStatus = m
	}
	d.Counted, d.Truncated = all.Counted, all.Truncated
	hour, err := u.in.CountRuns(ctx, client.ListOptions{Since: u.opts.Clock.Now().Add(-time.Hour)})
	if err != nil {
		return nil, err
	}
	for name, m := range hour.Tasks {
		get(name).Hour = m
	}
	for _, t := range by {
		d.Tasks = append(d.Tasks, t)
	}
	slices.SortFunc(d.Tasks, func(a, b *taskCounts) int { return strings.Compare(a.Task, b.Task) })
	names := make([]string, len(d.Tasks))
	for i, t := range d.Tasks {
		names[i] = t.Task
	}
	if len(names) > 0 {
		if d.Queues, err = u.in.QueueStats(ctx, names...); err != nil {
			return nil, err
		}
	}
	if d.Charts, err = u.readCharts(ctx, ""); err != nil {
		return nil, err
	}
	return d, nil
}
