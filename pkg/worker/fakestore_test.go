package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// fakeStore stands in for the engine behind every interface the
// components declare. Each method counts its calls and those in flight,
// and does what its hook says (nothing, when the hook is nil).
type fakeStore struct {
	calls    atomic.Int64
	inFlight atomic.Int64

	mu         sync.Mutex
	groups     []string
	registered map[string][]byte
	requeued   []string

	readGroup    func(ctx context.Context, count int) ([]engine.Delivery, error)
	autoClaim    func(task string, count int) ([]engine.Delivery, error)
	heartbeat    func(task string, leases []engine.Lease) ([]engine.LeaseReport, error)
	runStates    func(ids []string) ([]engine.RunState, error)
	promote      func(part, limit int) (int, time.Time, error)
	sweepRuns    func(offset, limit int) (removed, looked int, err error)
	recover      func(now time.Time, grace time.Duration, limit int) (taken, finished int, err error)
	recoverWaits func(now time.Time, grace time.Duration, limit int) (taken, woken int, err error)
	registerTask func(name string, record []byte, replace bool) ([]byte, error)
	missingTasks func(names []string) ([]string, error)
	startBatch   func(ds []engine.Delivery) ([]engine.StartResult, []error)
	finishBatch  func(ps []*engine.FinishParams) ([]engine.FinishResult, []error)
	beatWorker   func() error
}

var (
	_ processorStore = (*fakeStore)(nil)
	_ leaseStore     = (*fakeStore)(nil)
	_ retryStore     = (*fakeStore)(nil)
	_ sweepStore     = (*fakeStore)(nil)
	_ fanoutStore    = (*fakeStore)(nil)
	_ registryStore  = (*fakeStore)(nil)
	_ claimer        = (*fakeStore)(nil)
	_ streamReader   = (*fakeStore)(nil)
	_ presenceStore  = (*fakeStore)(nil)
)

func (f *fakeStore) BeatWorker(context.Context, engine.WorkerRecord, time.Time, time.Duration) error {
	defer f.enter()()
	if f.beatWorker != nil {
		return f.beatWorker()
	}
	return nil
}

func (f *fakeStore) DeregisterWorker(context.Context, string) error {
	defer f.enter()()
	return nil
}

func (f *fakeStore) enter() func() {
	f.calls.Add(1)
	f.inFlight.Add(1)
	return func() { f.inFlight.Add(-1) }
}

func (f *fakeStore) ReadGroup(ctx context.Context, _ int, _ string, _ []string, count int, block time.Duration) ([]engine.Delivery, error) {
	defer f.enter()()
	if f.readGroup != nil {
		return f.readGroup(ctx, count)
	}
	// As Redis does with nothing to read: block, then return nothing.
	t := time.NewTimer(block)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, nil
	}
}

// ReadByPriority reads as ReadGroup does, without waiting: the fake has
// one priority.
func (f *fakeStore) ReadByPriority(ctx context.Context, _ int, _ string, _ []string, count, _ int) ([]engine.Delivery, bool, error) {
	defer f.enter()()
	if f.readGroup != nil {
		ds, err := f.readGroup(ctx, count)
		return ds, false, err
	}
	return nil, false, nil
}

func (f *fakeStore) AutoClaim(_ context.Context, _ int, task, _ string, _ time.Duration, count int) ([]engine.Delivery, error) {
	defer f.enter()()
	if f.autoClaim != nil {
		return f.autoClaim(task, count)
	}
	return nil, nil
}

func (f *fakeStore) Heartbeat(_ context.Context, task, _ string, leases []engine.Lease) ([]engine.LeaseReport, error) {
	defer f.enter()()
	if f.heartbeat != nil {
		return f.heartbeat(task, leases)
	}
	return make([]engine.LeaseReport, len(leases)), nil
}

func (f *fakeStore) RunStates(_ context.Context, ids []string) ([]engine.RunState, error) {
	defer f.enter()()
	if f.runStates != nil {
		return f.runStates(ids)
	}
	return make([]engine.RunState, len(ids)), nil
}

func (f *fakeStore) PromoteDue(_ context.Context, part int, _ time.Time, limit int) (int, time.Time, error) {
	defer f.enter()()
	if f.promote != nil {
		return f.promote(part, limit)
	}
	return 0, time.Time{}, nil
}

func (f *fakeStore) SweepRuns(_ context.Context, _ int, _ time.Time, offset, limit int) (int, int, error) {
	defer f.enter()()
	if f.sweepRuns != nil {
		return f.sweepRuns(offset, limit)
	}
	return 0, 0, nil
}

func (f *fakeStore) RecoverFanouts(_ context.Context, now time.Time, grace time.Duration, limit int) (int, int, error) {
	defer f.enter()()
	if f.recover != nil {
		return f.recover(now, grace, limit)
	}
	return 0, 0, nil
}

func (f *fakeStore) RecoverEventWaiters(_ context.Context, now time.Time, grace time.Duration, limit int) (int, int, error) {
	defer f.enter()()
	if f.recoverWaits != nil {
		return f.recoverWaits(now, grace, limit)
	}
	return 0, 0, nil
}

func (f *fakeStore) RecordPartitions(context.Context) error {
	defer f.enter()()
	return nil
}

func (f *fakeStore) EnsureGroup(_ context.Context, task string) error {
	defer f.enter()()
	f.mu.Lock()
	f.groups = append(f.groups, task)
	f.mu.Unlock()
	return nil
}

func (f *fakeStore) RegisterTask(_ context.Context, name string, record []byte, replace bool) ([]byte, error) {
	defer f.enter()()
	if f.registerTask != nil {
		return f.registerTask(name, record, replace)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.registered == nil {
		f.registered = map[string][]byte{}
	}
	prev := f.registered[name]
	if prev == nil || replace {
		f.registered[name] = record
	}
	return prev, nil
}

func (f *fakeStore) MissingTasks(_ context.Context, names []string) ([]string, error) {
	defer f.enter()()
	if f.missingTasks != nil {
		return f.missingTasks(names)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range names {
		if f.registered[n] == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

func (f *fakeStore) StartBatch(_ context.Context, _ string, _ time.Time, ds []engine.Delivery) ([]engine.StartResult, []error) {
	defer f.enter()()
	if f.startBatch != nil {
		return f.startBatch(ds)
	}
	res := make([]engine.StartResult, len(ds))
	for i, d := range ds {
		sp := d.Spec
		if sp == nil {
			sp = &engine.RunSpec{}
		}
		res[i] = engine.StartResult{Started: true, Attempt: sp.Attempts + 1, Spec: sp}
	}
	return res, make([]error, len(ds))
}

func (f *fakeStore) FinishBatch(_ context.Context, ps []*engine.FinishParams) ([]engine.FinishResult, []error) {
	defer f.enter()()
	if f.finishBatch != nil {
		return f.finishBatch(ps)
	}
	res := make([]engine.FinishResult, len(ps))
	for i := range ps {
		res[i] = engine.FinishResult{Written: true, Status: engine.StatusSucceeded}
	}
	return res, make([]error, len(ps))
}

func (f *fakeStore) Requeue(_ context.Context, runID, _ string, _ int) (engine.FinishResult, error) {
	defer f.enter()()
	f.mu.Lock()
	f.requeued = append(f.requeued, runID)
	f.mu.Unlock()
	return engine.FinishResult{Written: true, Status: engine.StatusQueued}, nil
}

func (f *fakeStore) WakeRuns(context.Context, []string) error { return nil }

func (f *fakeStore) AddEventWaiter(context.Context, string, string, time.Time) error { return nil }

func (f *fakeStore) PageEvents(context.Context, string, *engine.IndexEntry, int) ([]engine.IndexEntry, error) {
	return nil, nil
}

func (f *fakeStore) GetEvents(context.Context, []string) ([]*engine.Event, error) { return nil, nil }

func (f *fakeStore) ReadSignals(context.Context, string, string, int, time.Duration) ([]engine.Signal, error) {
	defer f.enter()()
	return nil, nil
}

func (f *fakeStore) StepResult(context.Context, string, string) ([]byte, bool, error) {
	defer f.enter()()
	return nil, false, nil
}

func (f *fakeStore) SaveStepResult(_ context.Context, _, _ string, result []byte) ([]byte, error) {
	defer f.enter()()
	return result, nil
}

// fakeDispatcher takes what the fetcher or recoverer dispatches, and frees
// each delivery's slot at once, as a processor whose handlers return at
// once would.
type fakeDispatcher struct {
	slots slots
	mu    sync.Mutex
	got   []engine.Delivery
	// seen receives the count dispatched so far after each dispatch.
	seen chan int
}

func (d *fakeDispatcher) dispatch(ds []engine.Delivery) {
	if len(ds) == 0 {
		return
	}
	d.mu.Lock()
	d.got = append(d.got, ds...)
	n := len(d.got)
	d.mu.Unlock()
	d.slots.release(len(ds))
	if d.seen != nil {
		d.seen <- n
	}
}

func (d *fakeDispatcher) dispatched() []engine.Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]engine.Delivery(nil), d.got...)
}

type fakeRestorer struct{ calls atomic.Int64 }

func (r *fakeRestorer) restore(context.Context) error { r.calls.Add(1); return nil }

// fixedClock is a Clock standing still.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

var errFake = errors.New("fake failure")

// AddRunStats takes the run statistics and keeps none.
func (f *fakeStore) AddRunStats(context.Context, engine.RunStatsBatch) error { return nil }
