package enginetest

import (
	"reflect"
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var workerCases = []suiteCase{
	{"LiveWorkerIsListedWithItsRuns", liveWorker},
	{"SilentWorkerIsDeadAndItsRunsLapsed", deadWorker},
	{"WorkerRecordsExpireAndDeregister", workerExpiry},
	{"BeatWorkerRefusesBadRecords", badWorker},
	{"TaskRegistry", taskRegistry},
}

func workerRecord(name string, tasks ...string) engine.WorkerRecord {
	return engine.WorkerRecord{Name: name, Host: "host-1", PID: 4242, Version: "v1.2.3", Tasks: tasks, Concurrency: 7,
		Started: time.UnixMilli(time.Now().UnixMilli() - 5000), HeartbeatInterval: time.Second, LeaseDuration: 3 * time.Second}
}

func (h *h) workers(now time.Time) engine.WorkersView {
	h.Helper()
	v, err := h.e.ListWorkers(h.ctx, engine.ListWorkersParams{Now: now, DefaultLease: time.Minute})
	if err != nil {
		h.Fatal(err)
	}
	return v
}

func liveWorker(h *h) {
	rec := workerRecord("w1", "t")
	if err := h.e.BeatWorker(h.ctx, rec, h.now, 0); err != nil {
		h.Fatal(err)
	}
	p := h.params("t", "k1", engine.StrategyStatus)
	h.running(p, "w1")
	h.enqueue(h.params("t", "k2", engine.StrategyStatus)) // queued, held by nobody
	v := h.workers(h.now.Add(time.Second))
	if len(v.Workers) != 1 {
		h.Fatalf("workers = %+v, want w1", v.Workers)
	}
	w := v.Workers[0]
	if !reflect.DeepEqual(w.WorkerRecord, rec) {
		h.Fatalf("record = %+v, want %+v", w.WorkerRecord, rec)
	}
	if w.Dead || !w.LastHeartbeat.Equal(h.now) {
		h.Fatalf("dead %v, last heartbeat %v: want live, beat at %v", w.Dead, w.LastHeartbeat, h.now)
	}
	if len(w.Runs) != 1 {
		h.Fatalf("runs = %+v, want %s", w.Runs, p.RunID)
	}
	if r := w.Runs[0]; r.RunID != p.RunID || r.Lapsed || r.Task != "t" || r.Consumer != "w1" || r.Deliveries != 1 ||
		r.EntryID == "" || r.Partition != h.partOf(p.RunID) {
		h.Fatalf("held run = %+v", r)
	}
	if len(v.Lapsed) != 0 || v.Truncated {
		h.Fatalf("lapsed = %+v, truncated %v; want none", v.Lapsed, v.Truncated)
	}
}

// A worker that stops beating is dead after WorkerDeadAfterBeats
// intervals, and the runs it holds lapsed; a lease that ran out lapses
// even while its worker lives.
func deadWorker(h *h) {
	dead, live := workerRecord("dead", "t"), workerRecord("live", "u")
	live.LeaseDuration = 50 * time.Millisecond
	for _, r := range []engine.WorkerRecord{dead, live} {
		if err := h.e.BeatWorker(h.ctx, r, h.now, 0); err != nil {
			h.Fatal(err)
		}
	}
	h.running(h.params("t", "k1", engine.StrategyStatus), "dead")
	h.running(h.params("u", "k2", engine.StrategyStatus), "live")
	time.Sleep(100 * time.Millisecond) // past live's lease, by real time as leases go
	later := h.now.Add(engine.WorkerDeadAfterBeats*time.Second + time.Millisecond)
	if err := h.e.BeatWorker(h.ctx, live, later, 0); err != nil {
		h.Fatal(err)
	}
	v := h.workers(later)
	if len(v.Workers) != 2 || v.Workers[0].Name != "live" || v.Workers[0].Dead || v.Workers[1].Name != "dead" || !v.Workers[1].Dead {
		h.Fatalf("workers = %+v, want live, then dead", v.Workers)
	}
	for _, w := range v.Workers {
		if len(w.Runs) != 1 || !w.Runs[0].Lapsed {
			h.Fatalf("%s holds %+v, want one lapsed run", w.Name, w.Runs)
		}
	}
	if len(v.Lapsed) != 2 {
		h.Fatalf("lapsed = %+v, want both runs", v.Lapsed)
	}
	v = h.workers(h.now.Add(engine.WorkerDeadAfterBeats * time.Second))
	for _, w := range v.Workers {
		if w.Name == "dead" && (w.Dead || w.Runs[0].Lapsed) {
			h.Fatalf("at the deadline %+v shows dead or lapsed", w)
		}
	}
}

// A dead worker stays listed for keep, then its record expires; a
// deregistered worker is gone at once.
func workerExpiry(h *h) {
	rec := workerRecord("w1", "t")
	rec.HeartbeatInterval = 50 * time.Millisecond
	keep := 100 * time.Millisecond // gone 250ms after the beat
	if err := h.e.BeatWorker(h.ctx, rec, h.now, keep); err != nil {
		h.Fatal(err)
	}
	if err := h.e.BeatWorker(h.ctx, workerRecord("w2"), h.now, 0); err != nil {
		h.Fatal(err)
	}
	if v := h.workers(h.now); len(v.Workers) != 2 {
		h.Fatalf("workers = %+v, want w1 and w2", v.Workers)
	}
	if err := h.e.DeregisterWorker(h.ctx, "w2"); err != nil {
		h.Fatal(err)
	}
	if v := h.workers(h.now.Add(200 * time.Millisecond)); len(v.Workers) != 1 || v.Workers[0].Name != "w1" || !v.Workers[0].Dead {
		h.Fatalf("workers = %+v, want w1 only, dead", v.Workers)
	}
	h.eventually("the dead worker's record expires", func() bool {
		h.elapse(100 * time.Millisecond)
		return len(h.workers(time.Now().Add(time.Hour)).Workers) == 0
	})
}

func badWorker(h *h) {
	if err := h.e.BeatWorker(h.ctx, engine.WorkerRecord{HeartbeatInterval: time.Second}, h.now, 0); err == nil {
		h.Fatal("a record without a name was written")
	}
	if err := h.e.BeatWorker(h.ctx, engine.WorkerRecord{Name: "w"}, h.now, 0); err == nil {
		h.Fatal("a record without a heartbeat interval was written")
	}
	if v := h.workers(h.now); len(v.Workers) != 0 {
		h.Fatalf("workers = %+v, want none", v.Workers)
	}
}

func taskRegistry(h *h) {
	old, err := h.e.RegisterTask(h.ctx, "t", []byte(`{"v":1}`), true)
	if err != nil || old != nil {
		h.Fatalf("first registration returned %q, %v", old, err)
	}
	if old, err = h.e.RegisterTask(h.ctx, "t", []byte(`{"v":2}`), false); err != nil || string(old) != `{"v":1}` {
		h.Fatalf("keep = %q, %v; want the previous", old, err)
	}
	if cur, err := h.e.GetTask(h.ctx, "t"); err != nil || string(cur) != `{"v":1}` {
		h.Fatalf("keep mode replaced the registration: %q, %v", cur, err)
	}
	if old, err = h.e.RegisterTask(h.ctx, "t", []byte(`{"v":3}`), true); err != nil || string(old) != `{"v":1}` {
		h.Fatalf("replace = %q, %v", old, err)
	}
	if _, err := h.e.RegisterTask(h.ctx, "u", []byte(`{}`), false); err != nil {
		h.Fatal(err)
	}
	all, err := h.e.ListTasks(h.ctx)
	if err != nil || len(all) != 2 || string(all["t"]) != `{"v":3}` || string(all["u"]) != `{}` {
		h.Fatalf("registry = %q, %v", all, err)
	}
	if cur, err := h.e.GetTask(h.ctx, "none"); err != nil || cur != nil {
		h.Fatalf("a task never registered = %q, %v", cur, err)
	}
	missing, err := h.e.MissingTasks(h.ctx, []string{"gone", "t", "also-gone", "u"})
	if err != nil || !slices.Equal(missing, []string{"gone", "also-gone"}) {
		h.Fatalf("missing = %v, %v", missing, err)
	}
}
