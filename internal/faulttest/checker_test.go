package faulttest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/pkg/client"
)

// A concurrent history with faults passes the checker: duplicate and
// unique keys under all strategies, retries and cancels, while a worker is
// SIGKILLed mid-run, another is SIGSTOPped past its lease and resumed, and
// Redis is killed and restarted. The same history, corrupted in the ways a
// broken queue would corrupt it, fails with the rule it breaks: so the
// checker can fail.
func TestCheckerOnHistoryWithFaults(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, faulttest.TaskConfig{TTL: 300 * time.Millisecond, Retain: 200 * time.Millisecond})
	w1 := cl.worker(nil)
	w2 := cl.worker(nil)
	cl.worker(nil)
	ctx := context.Background()

	var fired atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		load(ctx, cl, loadOptions{clients: 4, perClient: 80, sharedKeys: 4, pause: 5 * time.Millisecond, cancels: true}, &fired)
	}()
	at := func(n int64) {
		eventually(t, 15*time.Second, "the load to go on", func() bool { return fired.Load() >= n })
	}
	at(40)
	w1.Kill()
	cl.worker(nil)
	at(100)
	if err := w2.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past its one-second lease
	if err := w2.Resume(); err != nil {
		t.Fatal(err)
	}
	at(180)
	cl.srv.Kill()
	time.Sleep(300 * time.Millisecond)
	cl.srv.Start()
	<-done

	for id, info := range cl.waitAll(20 * time.Second) {
		if info.Status != client.StatusSucceeded && info.Status != client.StatusCancelled {
			t.Errorf("run %s ended %s: %s", id, info.Status, info.Error)
		}
	}
	ops, rep := cl.check()
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("history: %d operations in %d partitions; %d triggers: %d accepted, %d collisions, %d failed, %d unknown; runs %d, ended %v",
		rep.Ops, rep.Partitions, rep.Triggers, rep.Accepted, rep.Collisions, rep.Failed, rep.Indeterminate, rep.Runs, rep.Ended)
	if rep.Collisions == 0 || rep.Ended["cancelled"] == 0 {
		t.Fatalf("the load made %d collisions and %d cancels; want some of each", rep.Collisions, rep.Ended["cancelled"])
	}

	corrupt := func(name string, f func([]history.Op) []history.Op, rules ...string) {
		t.Run(name, func(t *testing.T) {
			bad := f(append([]history.Op(nil), ops...))
			r := history.Check(bad, history.Options{Timeout: 20 * time.Second})
			if r.OK() {
				t.Fatalf("corrupted history passed")
			}
			for _, rule := range rules {
				if !r.Has(rule) {
					t.Fatalf("want a %s violation, got:\n%v", rule, r.Err())
				}
			}
		})
	}
	find := func(ops []history.Op, pred func(*history.Op) bool) *history.Op {
		for i := range ops {
			if pred(&ops[i]) {
				return &ops[i]
			}
		}
		t.Fatal("the history has no operation to corrupt")
		return nil
	}
	collision := func(o *history.Op) bool {
		return o.Kind == history.KindEnqueue && o.Result.Code == history.CodeRefused && o.Result.Owner != o.RunID
	}
	// certainlyHeld picks a collision made while its owner certainly held
	// the key, the whole time: a status key before any operation that
	// could have ended the owner was called, or a ttl key well inside its
	// ttl. Turned into an acceptance, such a collision is two owners at
	// once; one at the edge of the owner's claim might really have found
	// the key free.
	certainlyHeld := func(o *history.Op) bool {
		if !collision(o) || o.Strategy != "status" && o.Strategy != "ttl" {
			return false
		}
		var claim *history.Op
		for i := range ops {
			e := &ops[i]
			if e.RunID != o.Result.Owner {
				continue
			}
			switch e.Kind {
			case history.KindEnqueue:
				if e.Result.Code == history.CodeOK {
					claim = e
				}
			case history.KindStart, history.KindFinish, history.KindCancel, history.KindRequeue:
				if o.Strategy == "status" && e.Call <= o.Return {
					return false
				}
			}
		}
		margin := int64(50 * time.Millisecond)
		return claim != nil && (o.Strategy == "status" || o.Return < claim.Call+claim.HoldMs*int64(time.Millisecond)-margin)
	}

	corrupt("collision names another key's run", func(ops []history.Op) []history.Op {
		c := find(ops, collision)
		other := find(ops, func(o *history.Op) bool {
			return o.Kind == history.KindEnqueue && o.Result.Code == history.CodeOK && o.Key != c.Key && o.Key != ""
		})
		c.Result.Owner = other.RunID
		return ops
	}, history.RuleLinearizable, history.RuleCollisionOwner)

	corrupt("a duplicate is accepted while the key is held", func(ops []history.Op) []history.Op {
		c := find(ops, certainlyHeld)
		c.Result = history.Result{Code: history.CodeOK, Reply: 1}
		return ops
	}, history.RuleLinearizable, history.RuleDoubleOwner)

	corrupt("a run never ends", func(ops []history.Op) []history.Op {
		f := find(ops, func(o *history.Op) bool {
			return o.Kind == history.KindFinish && o.Result.Code == history.CodeOK && o.Result.Status == "succeeded"
		})
		run := f.RunID
		out := ops[:0]
		for _, o := range ops {
			ended := (o.Kind == history.KindFinish && (o.Result.Status == "succeeded" || o.Result.Status == "failed")) ||
				o.Kind == history.KindReadRun || o.Kind == history.KindReadKey || o.Kind == history.KindCancel
			if o.RunID == run && ended {
				continue
			}
			out = append(out, o)
		}
		return out
	}, history.RuleRunLost)

	corrupt("a stale attempt's write is accepted", func(ops []history.Op) []history.Op {
		f := find(ops, func(o *history.Op) bool {
			return o.Kind == history.KindFinish && o.Result.Code == history.CodeOK && o.Result.Status == "succeeded"
		})
		// A newer attempt started just before this finish was sent.
		newer := history.Op{Process: "phantom", ID: 1, Kind: history.KindStart, RunID: f.RunID,
			Call: f.Call - 2000, Return: f.Call - 1000,
			Result: history.Result{Code: history.CodeOK, Attempt: f.Attempt + 1, Status: "running"}}
		return append(ops, newer)
	}, history.RuleLinearizable, history.RuleStaleWrite)

	corrupt("a caller is told of a collision for the run it created", func(ops []history.Op) []history.Op {
		tr := find(ops, func(o *history.Op) bool { return o.Kind == history.KindTrigger && o.Result.Code == history.CodeOK })
		tr.Result = history.Result{Code: history.CodeRefused, Owner: tr.Result.RunID}
		return ops
	}, history.RuleTriggerResult)
}
