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
