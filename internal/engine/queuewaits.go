package engine

// QueueWait counts a task's runs held out of its streams, summed over the
// partitions.
type QueueWait struct {
	// Scheduled counts runs waiting for their scheduled time (RunAt,
	// RunIn) or a debounce window.
	Scheduled int64
	// RateLimited counts runs a rate limit held back, waiting to be
	// queued again.
	RateLimited int64
	// Concurrency counts runs parked by their concurrency group.
	Concurrency int64
	// Retrying counts runs waiting for their next attempt after a failed
	// one.
	Retrying int64
}
