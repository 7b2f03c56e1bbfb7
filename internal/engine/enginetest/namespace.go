package enginetest

import (
	"errors"

	"github.com/taskq/taskq/internal/engine"
)

var namespaceCases = []suiteCase{
	{"PingAndPartitions", pingAndPartitions},
	{"PartitionCountIsRecordedOnce", partitionsRecorded},
	{"NamespacesAreIsolated", namespacesIsolated},
}

func pingAndPartitions(h *h) {
	if err := h.e.Ping(h.ctx); err != nil {
		h.Fatalf("ping: %v", err)
	}
	if err := h.e.RecordPartitions(h.ctx); err != nil {
		h.Fatalf("record partitions: %v", err)
	}
	if n, err := h.e.PartitionCount(h.ctx); err != nil || n != h.parts || n > engine.PartitionsMax {
		h.Fatalf("partition count = %d, %v; want %d again", n, err, h.parts)
	}
	// Every partition serves reads, and an ID naming one is placed there.
	for part := range h.parts {
		if id := engine.InPartition("x", part); h.partOf(id) != part {
			h.Fatalf("%s names partition %d", id, h.partOf(id))
		}
	}
}

// An engine opened on a namespace in use adopts its count, and one
// configured with another count is refused.
func partitionsRecorded(h *h) {
	if h.opts.Reopen == nil {
		return
	}
	if err := h.e.RecordPartitions(h.ctx); err != nil {
		h.Fatal(err)
	}
	adopted := h.opts.Reopen(h.T, h.e, 0)
	if n, err := adopted.PartitionCount(h.ctx); err != nil || n != h.parts {
		h.Fatalf("adopted count = %d, %v; want %d", n, err, h.parts)
	}
	same := h.opts.Reopen(h.T, h.e, h.parts)
	if err := same.RecordPartitions(h.ctx); err != nil {
		h.Fatalf("the same count: %v", err)
	}
	other := h.opts.Reopen(h.T, h.e, h.parts+1)
	err := other.RecordPartitions(h.ctx)
	var mm *engine.PartitionsMismatchError
	if !errors.Is(err, engine.ErrPartitionsMismatch) || !errors.As(err, &mm) || mm.Configured != h.parts+1 || mm.Recorded != h.parts {
		h.Fatalf("another count: %v; want a *PartitionsMismatchError of %d configured, %d recorded", err, h.parts+1, h.parts)
	}
	if _, err := other.PartitionCount(h.ctx); !errors.Is(err, engine.ErrPartitionsMismatch) {
		h.Fatalf("partition count of a mismatched engine: %v", err)
	}
}

// What one namespace holds, another does not see: its keys are free there.
func namespacesIsolated(h *h) {
	h.enqueue(h.params("t", "k", engine.StrategyStatus))
	if _, err := h.e.RegisterTask(h.ctx, "t", []byte(`{}`), true); err != nil {
		h.Fatal(err)
	}
	other := h.open(h.T)
	if _, held, err := other.GetKey(h.ctx, "k"); err != nil || held {
		h.Fatalf("another namespace's key: held %v, %v", held, err)
	}
	if n, err := other.IndexedRuns(h.ctx); err != nil || n != 0 {
		h.Fatalf("another namespace indexes %d runs, %v", n, err)
	}
	if tasks, err := other.ListTasks(h.ctx); err != nil || len(tasks) != 0 {
		h.Fatalf("another namespace's tasks = %v, %v", tasks, err)
	}
	if r, err := other.Enqueue(h.ctx, h.params("t", "k", engine.StrategyStatus)); err != nil || !r.Accepted {
		h.Fatalf("the same key in another namespace = %+v, %v", r, err)
	}
}
