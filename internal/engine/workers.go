package engine

import (
	"sort"
	"time"
)

const (
	// WorkerDeadAfterBeats is how many heartbeat intervals a worker may go
	// without one before it is listed as dead.
	WorkerDeadAfterBeats = 3
	// WorkerKeepDefault is how long a dead worker stays listed.
	WorkerKeepDefault = time.Hour
	// WorkersListMax bounds the workers ListWorkers reads.
	WorkersListMax = 1000
	// DefaultLeaseDefault is the worker's default lease duration, assumed
	// for a delivery whose holder left no record.
	DefaultLeaseDefault = 30 * time.Second
	// PendingListDefault bounds the held deliveries ListWorkers reads per
	// task stream, unless told otherwise.
	PendingListDefault = 1000
)

// WorkerRecord is what a worker says of itself.
type WorkerRecord struct {
	Name        string
	Host        string
	PID         int
	Version     string
	Tasks       []string
	Concurrency int
	Started     time.Time
	// HeartbeatInterval is how often the record is written again.
	HeartbeatInterval time.Duration
	// LeaseDuration is how long a run the worker holds stays with it
	// without a renewal.
	LeaseDuration time.Duration
}

// ListWorkersParams say what ListWorkers reads.
type ListWorkersParams struct {
	// Now decides who is live; the zero time means time.Now().
	Now time.Time
	// PendingLimit bounds the held deliveries read per task stream
	// (default PendingListDefault).
	PendingLimit int
	// DefaultLease is the lease of a delivery whose holder has no record
	// (it stopped long ago, or predates worker records): its run awaits
	// redelivery once its lease has gone this long without renewal
	// (default DefaultLeaseDefault).
	DefaultLease time.Duration
}

// WorkerInfo is one listed worker.
type WorkerInfo struct {
	WorkerRecord
	// LastHeartbeat is when the record was last written.
	LastHeartbeat time.Time
	// Dead is set once WorkerDeadAfterBeats intervals passed without a beat.
	Dead bool
	// Runs are the runs whose deliveries the worker holds, oldest first.
	Runs []HeldRun
}

// HeldRun is a delivery a consumer holds: its lease, from the consumer
// group's pending list.
type HeldRun struct {
	RunID string
	Task  string
	// Partition is the partition of the task stream the delivery is in,
	// and Priority that stream's priority.
	Partition int
	Priority  int
	EntryID   string
	Consumer  string
	// Idle is how long the lease has gone without renewal.
	Idle time.Duration
	// Deliveries counts how often the entry was delivered.
	Deliveries int64
	// Lapsed is set when the lease ran out (Idle is past the holder's lease
	// duration) or its holder is dead or gone: the run is no longer being
	// worked on and awaits redelivery to another worker, whatever its
	// record's status says.
	Lapsed bool
}

// WorkersView is what ListWorkers found.
type WorkersView struct {
	// Workers are live workers, then dead ones, each by name.
	Workers []WorkerInfo
	// Lapsed are the held runs, of any consumer, whose lease lapsed.
	Lapsed []HeldRun
	// Truncated is set when a bound cut a list short.
	Truncated bool
}

// WithDefaults returns p with its zero fields set: Now to now, and the
// bounds to their defaults.
func (p ListWorkersParams) WithDefaults(now time.Time) ListWorkersParams {
	if p.Now.IsZero() {
		p.Now = now
	}
	if p.DefaultLease <= 0 {
		p.DefaultLease = DefaultLeaseDefault
	}
	if p.PendingLimit <= 0 {
		p.PendingLimit = PendingListDefault
	}
	return p
}

// NewWorkersView makes the view of workers, as read at now, and the held
// runs of any consumer: it marks dead the workers that went
// WorkerDeadAfterBeats intervals without a beat, hands each worker the runs
// it holds, marks lapsed the runs whose lease ran out or whose holder is
// dead, and orders the workers live first, then by name. A run whose
// holder has no record is lapsed once it has gone defaultLease without
// renewal (see ListWorkersParams.DefaultLease).
func NewWorkersView(now time.Time, defaultLease time.Duration, workers []WorkerInfo, held []HeldRun, truncated bool) WorkersView {
	view := WorkersView{Truncated: truncated}
	byName := make(map[string]*WorkerInfo, len(workers))
	for i := range workers {
		w := &workers[i]
		w.Dead = now.Sub(w.LastHeartbeat) > WorkerDeadAfterBeats*w.HeartbeatInterval
		byName[w.Name] = w
	}
	for _, h := range held {
		w := byName[h.Consumer]
		if w == nil {
			h.Lapsed = h.Idle > defaultLease
		} else {
			h.Lapsed = w.Dead || h.Idle > w.LeaseDuration
		}
		if w != nil {
			w.Runs = append(w.Runs, h)
		}
		if h.Lapsed {
			view.Lapsed = append(view.Lapsed, h)
		}
	}
	sort.SliceStable(workers, func(i, j int) bool {
		if workers[i].Dead != workers[j].Dead {
			return !workers[i].Dead
		}
		return workers[i].Name < workers[j].Name
	})
	view.Workers = workers
	return view
}
