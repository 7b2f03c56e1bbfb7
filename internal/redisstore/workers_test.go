package redisstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

func workerRecord(name string, tasks ...string) engine.WorkerRecord {
	return engine.WorkerRecord{
		Name: name, Host: "host-1", PID: 4242, Version: "v1.2.3", Tasks: tasks, Concurrency: 7,
		Started:           time.UnixMilli(time.Now().UnixMilli() - 5000),
		HeartbeatInterval: time.Second, LeaseDuration: 3 * time.Second,
	}
}

func (f *fixture) workers(now time.Time) engine.WorkersView {
	f.t.Helper()
	v, err := f.s.ListWorkers(f.ctx, engine.ListWorkersParams{Now: now, DefaultLease: time.Minute})
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func runIDs(hs []engine.HeldRun) []string {
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.RunID)
	}
	return ids
}

// A live worker is listed with what it wrote and the runs it holds; its
// runs are not lapsed.
func TestListWorkersShowsLiveWorkerAndItsRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		rec := workerRecord("w1", "t")
		if err := f.s.BeatWorker(f.ctx, rec, f.now, 0); err != nil {
			t.Fatal(err)
		}
		f.running(f.params("t", "k1", engine.StrategyStatus), "w1")
		queued := f.params("t", "k2", engine.StrategyStatus)
		f.enqueue(queued) // queued, not delivered: held by nobody

		v := f.workers(f.now.Add(time.Second))
		if len(v.Workers) != 1 {
			t.Fatalf("workers = %+v, want w1", v.Workers)
		}
		w := v.Workers[0]
		if !reflect.DeepEqual(w.WorkerRecord, rec) {
			t.Errorf("record = %+v, want %+v", w.WorkerRecord, rec)
		}
		if w.Dead || !w.LastHeartbeat.Equal(time.UnixMilli(f.now.UnixMilli())) {
			t.Errorf("dead %v, last heartbeat %v: want live, beat at %v", w.Dead, w.LastHeartbeat, f.now)
		}
		if got := runIDs(w.Runs); !reflect.DeepEqual(got, []string{"run-1"}) {
			t.Fatalf("runs = %v, want [run-1]", got)
		}
		if r := w.Runs[0]; r.Lapsed || r.Task != "t" || r.Consumer != "w1" || r.Deliveries != 1 || r.EntryID == "" {
			t.Errorf("held run = %+v: want task t, consumer w1, one delivery, not lapsed", r)
		}
		if len(v.Lapsed) != 0 {
			t.Errorf("lapsed = %+v, want none", v.Lapsed)
		}
	})
}

// A worker that stops beating is listed as dead after
// WorkerDeadAfterBeats intervals, and the runs it holds as lapsed, awaiting
// redelivery; a lease that ran out lapses even while its worker lives.
func TestListWorkersShowsDeadWorkerAndLapsedRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.now = f.now.Truncate(time.Millisecond) // as the record keeps it
		dead, live := workerRecord("dead", "t"), workerRecord("live", "u")
		live.LeaseDuration = 50 * time.Millisecond
		for _, r := range []engine.WorkerRecord{dead, live} {
			if err := f.s.BeatWorker(f.ctx, r, f.now, 0); err != nil {
				t.Fatal(err)
			}
		}
		f.running(f.params("t", "k1", engine.StrategyStatus), "dead")
		f.running(f.params("u", "k2", engine.StrategyStatus), "live")
		time.Sleep(100 * time.Millisecond) // past live's 50ms lease

		later := f.now.Add(engine.WorkerDeadAfterBeats*time.Second + time.Millisecond)
		if err := f.s.BeatWorker(f.ctx, live, later, 0); err != nil {
			t.Fatal(err)
		}
		v := f.workers(later)
		if len(v.Workers) != 2 || v.Workers[0].Name != "live" || v.Workers[0].Dead || v.Workers[1].Name != "dead" || !v.Workers[1].Dead {
			t.Fatalf("workers = %+v, want live (live) then dead (dead)", v.Workers)
		}
		for _, w := range v.Workers {
			if len(w.Runs) != 1 || !w.Runs[0].Lapsed {
				t.Errorf("%s holds %+v, want one lapsed run", w.Name, w.Runs)
			}
		}
		if got := runIDs(v.Lapsed); len(got) != 2 {
			t.Errorf("lapsed = %v, want run-1 and run-2", got)
		}
		// Just before the deadline the same worker is live, and its run
		// (lease 3s, renewed 100ms ago) held.
		v = f.workers(f.now.Add(engine.WorkerDeadAfterBeats * time.Second))
		for _, w := range v.Workers {
			if w.Name == "dead" && (w.Dead || w.Runs[0].Lapsed) {
				t.Errorf("at the deadline %+v shows dead or lapsed", w)
			}
		}
	})
}

// A dead worker stays listed for keep, then its record expires and the
// index forgets it; a deregistered worker is gone at once.
func TestWorkerEntriesExpire(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		rec := workerRecord("w1", "t")
		rec.HeartbeatInterval = 50 * time.Millisecond
		keep := 100 * time.Millisecond // expires 250ms after the beat
		start := time.Now()
		if err := f.s.BeatWorker(f.ctx, rec, start, keep); err != nil {
			t.Fatal(err)
		}
		if err := f.s.BeatWorker(f.ctx, workerRecord("w2"), start, 0); err != nil {
			t.Fatal(err)
		}
		if v := f.workers(start); len(v.Workers) != 2 {
			t.Fatalf("workers = %+v, want w1 and w2", v.Workers)
		}
		if err := f.s.DeregisterWorker(f.ctx, "w2"); err != nil {
			t.Fatal(err)
		}
		v := f.workers(start.Add(200 * time.Millisecond))
		if len(v.Workers) != 1 || v.Workers[0].Name != "w1" || !v.Workers[0].Dead {
			t.Fatalf("workers = %+v, want w1 only, dead", v.Workers)
		}
		b.Advance(300 * time.Millisecond)
		after := start.Add(300 * time.Millisecond) // the time miniredis was moved to
		if v := f.workers(after); len(v.Workers) != 0 {
			t.Fatalf("workers = %+v after the record expired, want none", v.Workers)
		}
		if f.exists(f.k.Worker("w1")) || f.exists(f.k.Worker("w2")) {
			t.Error("a worker record outlived its TTL or deregistration")
		}
		// The next beat of anyone trims the expired names from the index.
		if err := f.s.BeatWorker(f.ctx, workerRecord("w3"), after, 0); err != nil {
			t.Fatal(err)
		}
		if names := b.Client.ZRange(f.ctx, f.k.Workers(), 0, -1).Val(); !reflect.DeepEqual(names, []string{"w3"}) {
			t.Errorf("index = %v, want [w3]", names)
		}
	})
}

func TestBeatWorkerRejectsBadRecords(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	if err := f.s.BeatWorker(f.ctx, engine.WorkerRecord{HeartbeatInterval: time.Second}, f.now, 0); err == nil {
		t.Error("a record without a name was written")
	}
	if err := f.s.BeatWorker(f.ctx, engine.WorkerRecord{Name: "w"}, f.now, 0); err == nil {
		t.Error("a record without a heartbeat interval was written")
	}
}
