package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hb builds synthetic histories: times are milliseconds from a base.
type hb struct {
	ops []Op
	id  int64
}

const base = int64(1_700_000_000_000_000_000)

func at(ms float64) int64 { return base + int64(ms*float64(time.Millisecond)) }

func (h *hb) add(proc string, from, to float64, op Op, res Result) *hb {
	h.id++
	op.Process, op.ID, op.Call, op.Return, op.Result = proc, h.id, at(from), at(to), res
	if to < 0 {
		op.Return, op.Result = 0, Result{Code: CodeUnknown, Err: "never returned"}
	}
	h.ops = append(h.ops, op)
	return h
}

func enq(run, key, strat string, holdMs int64) Op {
	return Op{Kind: KindEnqueue, RunID: run, Task: "t", Key: key, Strategy: strat, HoldMs: holdMs, Token: "tok-" + run}
}

func start(run string) Op { return Op{Kind: KindStart, RunID: run} }

func finish(run string, attempt int, outcome string) Op {
	return Op{Kind: KindFinish, RunID: run, Attempt: attempt, Outcome: outcome}
}

var (
	created = Result{Code: CodeOK, Reply: 1}
	okRes   = func(status string) Result { return Result{Code: CodeOK, Status: status} }
	started = func(n int) Result { return Result{Code: CodeOK, Attempt: n, Status: "running"} }
	held    = func(owner string) Result { return Result{Code: CodeRefused, Owner: owner} }
	refused = func(why string) Result { return Result{Code: CodeRefused, Status: why} }
	unknown = Result{Code: CodeUnknown, Err: "EOF"}
)

// completed adds start, succeed and a final read of run.
func (h *hb) completed(proc, run string, from float64) *hb {
	return h.add(proc, from, from+1, start(run), started(1)).
		add(proc, from+2, from+3, finish(run, 1, "succeeded"), okRes("succeeded")).
		add("reader", 5000, 5001, Op{Kind: KindReadRun, RunID: run}, okRes("succeeded"))
}

func mustPass(t *testing.T, h *hb) *Report {
	t.Helper()
	r := Check(h.ops, Options{Timeout: 5 * time.Second})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustFail(t *testing.T, h *hb, rules ...string) *Report {
	t.Helper()
	r := Check(h.ops, Options{Timeout: 5 * time.Second})
	if r.OK() {
		t.Fatalf("history passed; want a violation of %v", rules)
	}
	for _, rule := range rules {
		if !r.Has(rule) {
			t.Fatalf("want a %s violation; got:\n%v", rule, r.Err())
		}
	}
	return r
}

func TestSequentialStatusHistoryPasses(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("c2", 2, 3, enq("R2", "k", "status", 60000), held("R1")).
		completed("w1", "R1", 10).
		add("c1", 20, 21, enq("R3", "k", "status", 60000), created).
		completed("w1", "R3", 30).
		add("reader", 5002, 5003, Op{Kind: KindReadKey, Key: "k"}, Result{Code: CodeOK})
	r := mustPass(t, h)
	if r.Runs != 2 || r.Ended["succeeded"] != 2 || len(r.Lost) != 0 {
		t.Fatalf("report = %+v", r)
	}
}

func TestConcurrentTriggersOneWinnerPasses(t *testing.T) {
	h := &hb{}
	// Three overlapping triggers: the one that returned last won.
	h.add("c1", 0, 10, enq("R1", "k", "status", 60000), held("R3")).
		add("c2", 1, 9, enq("R2", "k", "status", 60000), held("R3")).
		add("c3", 2, 8, enq("R3", "k", "status", 60000), created).
		completed("w1", "R3", 20)
	mustPass(t, h)
}

func TestTwoOwnersAtOnceFail(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("c2", 5, 6, enq("R2", "k", "status", 60000), created).
		completed("w1", "R1", 10).completed("w1", "R2", 20)
	mustFail(t, h, RuleLinearizable, RuleDoubleOwner)
}

// A partition found not linearizable is drawn in VisualizeDir, which
// describes each of the model's states.
func TestIllegalPartitionIsVisualized(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("c2", 5, 6, enq("R2", "k", "status", 60000), created).
		completed("w1", "R1", 10).completed("w1", "R2", 20)
	dir := t.TempDir()
	if r := Check(h.ops, Options{Timeout: 5 * time.Second, VisualizeDir: dir}); !r.Has(RuleLinearizable) {
		t.Fatalf("want a %s violation; got %v", RuleLinearizable, r.Err())
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(files) != 1 {
		t.Fatalf("visualizations: %v %v; want one", files, err)
	}
	html, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(html), `owner=\"R1\"`) {
		t.Fatalf("the visualization does not describe the state owned by R1 (%v)", err)
	}
}

func TestCollisionNamingAnEndedRunFails(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		completed("w1", "R1", 10).
		// R1 released the key at 13; a collision at 20 cannot name it.
		add("c2", 20, 21, enq("R2", "k", "status", 60000), held("R1"))
	mustFail(t, h, RuleLinearizable, RuleCollisionOwner)
}

func TestTTLExpiry(t *testing.T) {
	// ttl 50ms: a trigger 100ms later is accepted, one 10ms later collides.
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "ttl", 50), created).
		add("c2", 10, 11, enq("R2", "k", "ttl", 50), held("R1")).
		add("c1", 100, 101, enq("R3", "k", "ttl", 50), created).
		completed("w1", "R1", 2).completed("w1", "R3", 102)
	mustPass(t, h)

	bad := &hb{}
	bad.add("c1", 0, 1, enq("R1", "k", "ttl", 50), created).
		add("c2", 10, 11, enq("R2", "k", "ttl", 50), created).
		completed("w1", "R1", 2).completed("w1", "R2", 12)
	mustFail(t, bad, RuleLinearizable, RuleDoubleOwner)

	// Nor may the key still be held long after its ttl.
	late := &hb{}
	late.add("c1", 0, 1, enq("R1", "k", "ttl", 50), created).
		completed("w1", "R1", 2).
		add("c2", 200, 201, enq("R2", "k", "ttl", 50), held("R1"))
	mustFail(t, late, RuleLinearizable, RuleCollisionOwner)
}

func TestStaleAttemptWriteFails(t *testing.T) {
	base := func() *hb {
		h := &hb{}
		return h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
			add("wA", 2, 3, start("R1"), started(1)).
			// wA paused past its lease; wB redelivered and finished.
			add("wB", 1500, 1501, start("R1"), started(2)).
			add("wB", 1510, 1511, finish("R1", 2, "succeeded"), okRes("succeeded")).
			add("c1", 1520, 1521, enq("R2", "k", "status", 60000), created).
			completed("wB", "R2", 1530)
	}
	good := base()
	good.add("wA", 2000, 2001, finish("R1", 1, "succeeded"), refused("stale"))
	mustPass(t, good)

	bad := base()
	bad.add("wA", 2000, 2001, finish("R1", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, bad, RuleLinearizable, RuleStaleWrite)
}

func TestLostRunFails(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, start("R1"), started(1))
	r := mustFail(t, h, RuleRunLost)
	if len(r.Lost) != 1 || r.Lost[0] != "R1" {
		t.Fatalf("lost = %v", r.Lost)
	}
}

func TestUnknownOutcomes(t *testing.T) {
	h := &hb{}
	// A trigger whose reply was lost did create R1: a later collision
	// names it, and a worker runs it. A worker killed mid-start (no
	// return) used attempt 1; the next start got attempt 2.
	h.add("c1", 0, 5, enq("R1", "k", "status", 60000), unknown).
		add("c2", 10, 11, enq("R2", "k", "status", 60000), held("R1")).
		add("wdead", 12, -1, start("R1"), Result{}).
		add("w2", 1500, 1501, start("R1"), started(2)).
		add("w2", 1502, 1503, finish("R1", 2, "succeeded"), okRes("succeeded"))
	mustPass(t, h)
}

func TestResentEnqueueNamingItself(t *testing.T) {
	// go-redis resent an enqueue whose reply was lost: Redis answered the
	// second delivery with the run the first one created. The model counts
	// it as created; a caller told "collision" is a violation.
	h := &hb{}
	h.add("c1", 0, 5, enq("R1", "k", "status", 60000), held("R1")).
		completed("w1", "R1", 10)
	mustPass(t, h)
	h.add("c1", 0, 5, Op{Kind: KindTrigger, Key: "k", Token: "tok-R1"}, held("R1"))
	r := mustFail(t, h, RuleTriggerResult)
	if !strings.Contains(r.Err().Error(), "created run R1") {
		t.Fatal(r.Err())
	}
}

func TestRetainKeepsKeyAfterEnd(t *testing.T) {
	h := &hb{}
	e := enq("R1", "k", "status", 60000)
	e.RetainMs = 100
	h.add("c1", 0, 1, e, created).
		completed("w1", "R1", 2). // ends at 4-5
		add("c2", 50, 51, enq("R2", "k", "status", 60000), held("R1")).
		add("c2", 200, 201, enq("R3", "k", "status", 60000), created).
		completed("w1", "R3", 210)
	mustPass(t, h)
}

func TestRecorderRoundTrip(t *testing.T) {
	var buf strings.Builder
	rec := NewRecorder("p1", &buf)
	p := rec.Call(Op{Kind: KindEnqueue, RunID: "R1", Key: "k", Strategy: "ttl", HoldMs: 10})
	p.Return(created)
	rec.Call(Op{Kind: KindStart, RunID: "R1"}) // never returns
	ops, err := Read(strings.NewReader(buf.String() + `{"ph":"ret","p":"p1","id":`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Result.Code != CodeOK || ops[0].Return == 0 ||
		ops[1].Return != 0 || ops[1].Result.Code != CodeUnknown || ops[1].End() != 1<<63-1 {
		t.Fatalf("ops = %+v", ops)
	}
}

func TestSupersede(t *testing.T) {
	sup := func(run string) Op {
		o := enq(run, "k", "status", 60000)
		o.Policy = "supersede"
		return o
	}
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, start("R1"), started(1)).
		// R2 takes the key over and cancels R1: R1's late finish finds it
		// cancelled, and its worker's next start finds it ended.
		add("c2", 10, 11, sup("R2"), Result{Code: CodeOK, Reply: 1, Superseded: "R1"}).
		add("w1", 20, 21, finish("R1", 1, "succeeded"), refused("cancelled")).
		add("c3", 22, 23, enq("R3", "k", "status", 60000), held("R2")).
		completed("w1", "R2", 30)
	r := mustPass(t, h)
	if r.Ended["cancelled"] != 1 || r.Ended["succeeded"] != 1 {
		t.Fatalf("ended = %v", r.Ended)
	}
	// Taking over from a run that does not own the key is not possible.
	bad := &hb{}
	bad.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("c2", 10, 11, sup("R2"), Result{Code: CodeOK, Reply: 1, Superseded: "R9"}).
		completed("w1", "R1", 20).completed("w1", "R2", 30)
	mustFail(t, bad, RuleLinearizable)
}

func TestUnknownFinishMayHaveReleased(t *testing.T) {
	// The worker died while its finish was in flight; the finish did land,
	// releasing the key, so a later trigger was accepted long before the
	// fallback ttl. Neither check may call that two owners.
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, start("R1"), started(1)).
		add("w1", 4, -1, finish("R1", 1, "succeeded"), Result{}).
		add("c2", 100, 101, enq("R2", "k", "status", 60000), created).
		completed("w2", "R2", 110).
		add("reader", 5002, 5003, Op{Kind: KindReadRun, RunID: "R1"}, okRes("succeeded"))
	mustPass(t, h)
}

// A debounced trigger (reply 4) restarts its owner's window, so a refusal
// after the first window but within the restarted one is legal; without
// the restart it is not, and an owner that has started cannot be debounced.
func TestDebounceRestartsTheWindow(t *testing.T) {
	debouncedBy := func(owner string) Result { return Result{Code: CodeRefused, Owner: owner, Reply: 4} }
	history := func(second Result) *hb {
		h := &hb{}
		return h.add("c1", 0, 1, enq("R1", "k", "debounce", 50), created).
			add("c2", 30, 31, enq("R2", "k", "debounce", 50), second).
			add("c3", 70, 71, enq("R3", "k", "debounce", 50), held("R1")).
			completed("w1", "R1", 90).
			add("c4", 200, 201, enq("R4", "k", "debounce", 50), created).
			completed("w1", "R4", 260)
	}
	mustPass(t, history(debouncedBy("R1")))
	// A plain refusal does not restart it: R1's key lapsed by 56 ms.
	mustFail(t, history(held("R1")), RuleLinearizable, RuleCollisionOwner)

	running := &hb{}
	running.add("c1", 0, 1, enq("R1", "k", "debounce", 50), created).
		add("w1", 10, 11, start("R1"), started(1)).
		add("c2", 30, 31, enq("R2", "k", "debounce", 50), debouncedBy("R1")).
		add("w1", 40, 41, finish("R1", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, running, RuleLinearizable)
}

// beganFinish is a finish that begins its attempt itself: the handler
// returned before the worker asked start.lua to begin it.
func beganFinish(run string, attempt int, outcome string) Op {
	o := finish(run, attempt, outcome)
	o.Begins = true
	return o
}

func redeliveredStart(run string) Op {
	o := start(run)
	o.Redelivered = true
	return o
}

// A finish that begins its attempt is its start and its finish in one
// write: it ends a run no start ever began, releasing its key, and a
// retry it records leaves the run queued with that attempt begun, so the
// next start begins the one after.
func TestBeganFinishWrites(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, beganFinish("R1", 1, "succeeded"), okRes("succeeded")).
		// R1 released the key as it ended.
		add("c2", 10, 11, enq("R2", "k", "status", 60000), created).
		add("w1", 12, 13, beganFinish("R2", 1, "retry"), okRes("queued")).
		add("w2", 20, 21, start("R2"), started(2)).
		add("w2", 22, 23, finish("R2", 2, "succeeded"), okRes("succeeded")).
		// A second retry begun by its finish, after one begun by start.
		add("c3", 30, 31, enq("R3", "k", "status", 60000), created).
		add("w1", 32, 33, start("R3"), started(1)).
		add("w1", 34, 35, finish("R3", 1, "retry"), okRes("queued")).
		add("w2", 40, 41, beganFinish("R3", 2, "failed"), okRes("failed")).
		add("reader", 5000, 5001, Op{Kind: KindReadRun, RunID: "R1"}, okRes("succeeded")).
		add("reader", 5000, 5001, Op{Kind: KindReadRun, RunID: "R3"}, okRes("failed")).
		add("reader", 5002, 5003, Op{Kind: KindReadKey, Key: "k"}, Result{Code: CodeOK})
	r := mustPass(t, h)
	if r.Runs != 3 || r.Ended["succeeded"] != 2 || r.Ended["failed"] != 1 {
		t.Fatalf("report = %+v", r)
	}

	// Its attempt must be the run's next: R1 had begun none.
	bad := &hb{}
	bad.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, beganFinish("R1", 2, "succeeded"), okRes("succeeded"))
	mustFail(t, bad, RuleLinearizable)

	// Nor may it refuse a run it could have begun.
	refusedNext := &hb{}
	refusedNext.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, beganFinish("R1", 1, "succeeded"), refused("stale")).
		add("w1", 4, 5, beganFinish("R1", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, refusedNext, RuleLinearizable)
}

// A resent finish that began a retry finds the run queued without the
// delivery's entry: its "stale" reply reports the first delivery's write.
func TestResentBeganRetry(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("w1", 2, 3, beganFinish("R1", 1, "retry"), refused("stale")).
		add("w2", 20, 21, start("R1"), started(2)).
		add("w2", 22, 23, finish("R1", 2, "succeeded"), okRes("succeeded"))
	mustPass(t, h)
}

// wA's handler ran without beginning its attempt and its lease lapsed;
// wB reclaimed the delivery and began the attempt after next (the lost
// delivery counts). wA's late finish must be refused as stale: writing
// would be a stale attempt's write.
func TestBeganFinishAfterAnotherWorkersStart(t *testing.T) {
	base := func() *hb {
		h := &hb{}
		return h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
			add("wB", 1500, 1501, redeliveredStart("R1"), started(2)).
			add("wB", 1510, 1511, finish("R1", 2, "succeeded"), okRes("succeeded"))
	}
	good := base()
	good.add("wA", 1505, 1506, beganFinish("R1", 1, "succeeded"), refused("stale"))
	mustPass(t, good)

	// After wB's finish the run has ended: that is the reply then.
	ended := base()
	ended.add("wA", 2000, 2001, beganFinish("R1", 1, "succeeded"), refused("succeeded"))
	mustPass(t, ended)

	bad := base()
	bad.add("wA", 1505, 1506, beganFinish("R1", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, bad, RuleLinearizable, RuleStaleWrite)

	// A reclaimed delivery of a queued run skips the lost one's number.
	skipped := &hb{}
	skipped.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("wB", 1500, 1501, redeliveredStart("R1"), started(1)).
		add("wB", 1510, 1511, finish("R1", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, skipped, RuleLinearizable)
}

// A start and a finish that began the attempt itself cannot both have
// begun attempt 1: one of them ran a run another worker owned.
func TestAttemptBegunTwiceFails(t *testing.T) {
	h := &hb{}
	h.add("c1", 0, 1, enq("R1", "k", "status", 60000), created).
		add("wB", 2, 4, start("R1"), started(1)).
		add("wA", 3, 5, beganFinish("R1", 1, "succeeded"), okRes("succeeded")).
		add("wB", 6, 7, finish("R1", 1, "succeeded"), refused("succeeded"))
	r := mustFail(t, h, RuleLinearizable, RuleDoubleAttempt)
	if r.DoubleAttempts != 1 {
		t.Fatalf("double attempts = %d", r.DoubleAttempts)
	}
}

// An operation of unknown outcome may take effect at any time after its
// call, so a key's claim may expire before it takes effect; but every
// operation ordered after that expiry happened after it too. A duplicate
// accepted 50ms into a 300ms ttl is two owners, even when an unknown finish
// of the owner (a NOSCRIPT answered before go-redis resent the script) lies
// between them.
func TestExpiryBeforeAnUnknownOperationIsNotEarly(t *testing.T) {
	history := func(second Result) *hb {
		h := &hb{}
		return h.add("c1", 0, 1, enq("R1", "k", "ttl", 300), created).
			add("w1", 10, 11, beganFinish("R1", 1, "succeeded"), Result{Code: CodeUnknown, Err: "NOSCRIPT No matching script"}).
			add("w1", 12, 13, beganFinish("R1", 1, "succeeded"), okRes("succeeded")).
			add("c2", 50, 51, enq("R2", "k", "ttl", 300), second).
			add("c2", 400, 401, enq("R3", "k", "ttl", 300), created).
			add("w1", 410, 411, beganFinish("R3", 1, "succeeded"), okRes("succeeded")).
			add("reader", 5000, 5001, Op{Kind: KindReadRun, RunID: "R1"}, okRes("succeeded")).
			add("reader", 5000, 5001, Op{Kind: KindReadRun, RunID: "R3"}, okRes("succeeded"))
	}
	mustPass(t, history(held("R1")))
	bad := history(created)
	bad.add("w1", 60, 61, beganFinish("R2", 1, "succeeded"), okRes("succeeded"))
	mustFail(t, bad, RuleLinearizable, RuleDoubleOwner)
}
