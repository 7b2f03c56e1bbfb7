package faulttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// With a cluster of three masters and three replicas, the master serving
// the namespace's home partition (and others) is killed with SIGKILL in
// the middle of a burst of durable triggers while two worker processes run
// them, and its replica is promoted. Within recoveryBound of the
// promotion, without restarting any client or worker, triggers in the
// partitions it took over write their runs again (they fall short of
// their durability: the promoted master has no replica yet), each worker
// starts runs of those partitions, and the HTTP API, on a client of its
// own, accepts a trigger there. Once the killed node is back, as the new
// master's replica, durable triggers there are acknowledged again within
// recoveryBound. Every trigger that returned success (durably
// acknowledged) has exactly one run, which succeeded, no trigger has two,
// and the history checker passes.
//
// Then the same is done with durability off in another namespace, the
// HTTP API on a client dialled from the cluster URL as taskq serve's is:
// it recovers within recoveryBound too, and the triggers that returned a
// run whose run is gone after the failover are counted and logged
// (docs/scaling.md, "What a failover does"), not asserted.
func TestFailoverOfAMaster(t *testing.T) {
	pc := redistest.StartCluster(t, 3, 1)
	failoverDurable(t, pc)
	failoverFast(t, pc)
}

// failoverDurable is the durable phase. It leaves the cluster whole: three
// masters, each with its replica.
func failoverDurable(t *testing.T, pc *redistest.PrivateCluster) {
	r := newFailoverRig(t, pc, "fo-durable", task.Durability{Replicas: 1, Timeout: 500 * time.Millisecond})
	workers := []string{"w1", "w2"}
	for _, w := range workers {
		r.worker(w)
	}
	victim := r.masterOf(0)
	lost := r.partitionsOn(victim)
	t.Logf("killing node %d (%s), serving partitions %v of %d", victim, pc.Nodes[victim].Addr(), lost, r.parts)

	// taskq serve's HTTP API, on a cluster client of its own (recording
	// to the history too), has sent a trigger to the victim before it dies.
	hrdb, err := faulttest.Dial(pc.URL())
	if err != nil {
		t.Fatal(err)
	}
	faulttest.AddHook(hrdb, history.NewHook(r.rec))
	hc, err := client.New(client.Options{Redis: hrdb, Namespace: r.ns, Logger: quiet, OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close(); hrdb.Close() })
	api := r.serveHTTP(hc, lost)

	var fired atomic.Int64
	stopBurst := r.startBurst(&fired)
	eventually(t, 30*time.Second, "the burst under way", func() bool { return fired.Load() >= 200 })
	killedAt := time.Now()
	promoted, promotedAt := r.killMaster(victim)
	t.Logf("node %d promoted %s after the kill, %d triggers so far", promoted, promotedAt.Sub(killedAt).Round(time.Millisecond), fired.Load())

	// The HTTP API recovers.
	httpAt := r.httpRecovers(api, lost, promotedAt)
	// Triggers and every worker recover.
	var trigAt time.Time
	startAt := map[string]time.Time{}
	eventually(t, recoveryBound-time.Since(promotedAt), "triggers and every worker working on the promoted master", func() bool {
		if a, ok := r.firstAccepted(promotedAt, lost, true); ok {
			trigAt = a.at
		}
		for _, w := range workers {
			if s, ok := r.firstStart(w, promotedAt, lost); ok {
				startAt[w] = s.at
			}
		}
		return !trigAt.IsZero() && len(startAt) == len(workers)
	})
	// A waiter on a run there hears that it ended.
	raw, _ := json.Marshal(faulttest.Input{Op: "wait-after", Key: r.keyIn(lost, "wait-after"), Mode: faulttest.ModeSleep, SleepMs: 100})
	wctx, wcancel := context.WithTimeout(context.Background(), recoveryBound-time.Since(promotedAt))
	h, err := r.c.TriggerJSON(wctx, r.defs[faulttest.TaskStatus], raw, client.WithDurability(task.Durability{}))
	if err != nil {
		t.Fatalf("trigger to wait for: %v", err)
	}
	if info, err := h.Wait(wctx); err != nil || info.Status != client.StatusSucceeded {
		t.Fatalf("waiting for run %s after the promotion: %v %v", h.ID(), info, err)
	}
	wcancel()
	t.Logf("after the promotion: a trigger over HTTP accepted in %s, a trigger written in %s, first starts %v, a run waited for by %s",
		httpAt.Round(time.Millisecond), trigAt.Sub(promotedAt).Round(time.Millisecond), sinceEach(startAt, promotedAt),
		time.Since(promotedAt).Round(time.Millisecond))

	// The killed node comes back as the new master's replica; durable
	// triggers there are acknowledged again.
	pc.Nodes[victim].Start()
	if err := redistest.WaitClusterOK(pc.Addrs(), 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	rejoinedAt := time.Now()
	eventually(t, recoveryBound, "a durable trigger acknowledged on the promoted master", func() bool {
		_, ok := r.firstAccepted(rejoinedAt, lost, false)
		return ok
	})
	a, _ := r.firstAccepted(rejoinedAt, lost, false)
	t.Logf("the killed node rejoined as a replica %s after the promotion; a durable trigger acknowledged %s later",
		rejoinedAt.Sub(promotedAt).Round(time.Millisecond), a.at.Sub(rejoinedAt).Round(time.Millisecond))
	time.Sleep(time.Second) // the burst goes on a while on the recovered cluster
	stopBurst()

	r.waitEnded(60 * time.Second)
	byOp, nruns := r.runsByOp()
	r.mu.Lock()
	accepted, failed, shortfalls := append([]acceptedTrigger(nil), r.accepted...), len(r.failed), len(r.shortfalls)
	r.mu.Unlock()
	for _, a := range accepted {
		runs := byOp[a.op]
		switch {
		case len(runs) != 1:
			t.Errorf("trigger %s returned run %s, durably acknowledged, but %d runs have its input", a.op, a.run, len(runs))
		case runs[0].ID != a.run:
			t.Errorf("trigger %s returned run %s, but its run is %s", a.op, a.run, runs[0].ID)
		case runs[0].Status != "succeeded":
			t.Errorf("run %s of trigger %s ended %s (%s); want succeeded", a.run, a.op, runs[0].Status, runs[0].Error)
		}
	}
	for op, runs := range byOp {
		if len(runs) > 1 {
			t.Errorf("trigger %s has %d runs", op, len(runs))
		}
	}
	t.Logf("durable: %d triggers, %d acknowledged (each completed once), %d failed (%d of them written but not acknowledged), %d runs",
		fired.Load(), len(accepted), failed, shortfalls, nruns)
	// Every worker still shuts down when asked: none is stuck.
	for _, p := range r.workers {
		if !p.Stop(10 * time.Second) {
			t.Errorf("worker %s did not shut down within 10s of SIGTERM", p.Name)
		}
	}
	if err := r.check().Err(); err != nil {
		t.Fatal(err)
	}
}

// failoverFast is the phase with durability off: it counts the accepted
// triggers whose run the failover lost.
func failoverFast(t *testing.T, pc *redistest.PrivateCluster) {
	r := newFailoverRig(t, pc, "fo-fast", task.Durability{})
	for _, w := range []string{"f1", "f2"} {
		r.worker(w)
	}
	victim := r.masterOf(0)
	lost := r.partitionsOn(victim)
	// The HTTP API here is on a client dialled from the cluster URL, as
	// taskq serve's is (TASKQ_REDIS_URL, the default operation timeout).
	hc, err := client.New(client.Options{RedisURL: pc.URL(), Namespace: r.ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close() })
	api := r.serveHTTP(hc, lost)

	var fired atomic.Int64
	stopBurst := r.startBurst(&fired)
	eventually(t, 30*time.Second, "the burst under way", func() bool { return fired.Load() >= 200 })
	killedAt := time.Now()
	_, promotedAt := r.killMaster(victim)
	httpAt := r.httpRecovers(api, lost, promotedAt)
	eventually(t, recoveryBound-time.Since(promotedAt), "a trigger accepted on the promoted master", func() bool {
		_, ok := r.firstAccepted(promotedAt, lost, false)
		return ok
	})
	a, _ := r.firstAccepted(promotedAt, lost, false)
	time.Sleep(time.Second)
	stopBurst()
	r.waitEnded(60 * time.Second)

	byOp, _ := r.runsByOp()
	r.mu.Lock()
	accepted := append([]acceptedTrigger(nil), r.accepted...)
	failed := len(r.failed)
	r.mu.Unlock()
	var gone []string
	for _, a := range accepted {
		if len(byOp[a.op]) == 0 {
			gone = append(gone, a.op+" "+a.run)
		}
	}
	t.Logf("durability off: promoted %s after the kill, then a trigger accepted there in %s, over HTTP in %s; %d triggers, %d accepted, %d failed; %d accepted triggers lost %v",
		promotedAt.Sub(killedAt).Round(time.Millisecond), a.at.Sub(promotedAt).Round(time.Millisecond), httpAt.Round(time.Millisecond),
		fired.Load(), len(accepted), failed, len(gone), gone)
	for _, p := range r.workers {
		if !p.Stop(10 * time.Second) {
			t.Errorf("worker %s did not shut down within 10s of SIGTERM", p.Name)
		}
	}
}

// serveHTTP serves the HTTP API on c, as taskq serve does, and checks
// that it accepts a durable trigger in one of parts. It returns the API's
// URL.
func (r *failoverRig) serveHTTP(c *client.Client, parts []int) string {
	r.t.Helper()
	api, err := httpapi.New(httpapi.Options{Client: c, Insecure: true, Logger: quiet})
	if err != nil {
		r.t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	r.t.Cleanup(srv.Close)
	durable := map[string]any{"replicas": 1, "timeoutMs": 500}
	if code, err := httpTrigger(srv.URL, "http-before", r.keyIn(parts, "http-before"), durable); err != nil || code != http.StatusCreated {
		r.t.Fatalf("HTTP trigger before the failover: %d %v", code, err)
	}
	return srv.URL
}

// httpRecovers triggers over the HTTP API at base, in one of parts, until
// a trigger is accepted, and returns how long after promotedAt it was; it
// fails the test past recoveryBound. The triggers ask for no replica: the
// promoted master has none until the killed node comes back.
func (r *failoverRig) httpRecovers(base string, parts []int, promotedAt time.Time) time.Duration {
	r.t.Helper()
	for n := 0; ; n++ {
		op := fmt.Sprintf("http-after-%d", n)
		code, err := httpTrigger(base, op, r.keyIn(parts, op), nil)
		switch {
		case err == nil && code == http.StatusCreated:
			return time.Since(promotedAt)
		case time.Since(promotedAt) > recoveryBound:
			r.t.Fatalf("the HTTP API did not accept a trigger within %s of the promotion: %d %v", recoveryBound, code, err)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// sinceEach gives each time of m as the duration since t.
func sinceEach(m map[string]time.Time, t time.Time) map[string]time.Duration {
	out := make(map[string]time.Duration, len(m))
	for k, v := range m {
		out[k] = v.Sub(t).Round(time.Millisecond)
	}
	return out
}
