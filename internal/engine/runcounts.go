package engine

// RunTaskStatus is a run's task and status, as RunTaskStatuses reads them;
// both "" when its record is gone.
type RunTaskStatus struct {
	Task   string
	Status string
}
