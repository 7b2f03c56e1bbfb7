package history

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/taskq/taskq/internal/engine"
)

// The model: a sequential specification of one partition of the history,
// that is one idempotency key and every run that ever claimed it (a run
// without a key is a partition of its own). porcupine searches for an order
// of the partition's operations, consistent with their call and return
// times, in which every operation's recorded result is what this model
// says it returns. Finding none means no single atomic Redis could have
// produced what the processes saw.
//
// What the model allows, and why:
//
//   - A key has at most one owner. An enqueue creates its run and claims
//     the key only when the key is free; when it is held, the enqueue
//     creates nothing and must name the owner (policies attach and signal
//     also create nothing and name the owner). A superseding enqueue takes
//     the key from the owner it names and cancels that run. A debounced
//     enqueue (reply 4) names an owner that has not started, a queued run
//     of the debounce strategy, and starts the claim's window again.
//   - A claim ends only by release, expiry or supersede. Release: the run's
//     terminal write (finish, cancel, a start that finds it exhausted)
//     frees a status-strategy key, or re-arms it for the retain period, but
//     only while that run owns it. Expiry: a claim made at time c with
//     lifetime h expires at c+h by Redis's clock, which the model does not
//     see; it lets the key expire at any step whose interval reaches
//     [call+h-slack, ...] and forces it once a step begins after
//     return+h+slack. An expiry is an event of its own, at c+h-slack at
//     the earliest: every operation ordered after it must reach that time
//     too. Without that rule, an operation of unknown outcome (whose
//     interval never closes) could let the key expire at its place in the
//     order while operations placed after it, which returned long before
//     the expiry, saw the key free.
//   - Runs go queued -> running -> (queued again for a retry) -> succeeded,
//     failed or cancelled. A start begins attempt n only for a run that
//     has not ended, with n above every attempt begun before (attempts are
//     fencing tokens; a start whose reply was lost may have used a number).
//     A redelivered start of a queued run skips a number: the lost
//     delivery may have run its handler without beginning its attempt.
//     A finish or requeue is written only by the latest attempt of a
//     running run: a stale attempt's write must be refused as "stale".
//   - A finish that begins its attempt (Op.Begins) goes from queued
//     straight to the outcome: it writes only while the run is queued and
//     has begun exactly the attempts before its own, and then both begins
//     that attempt and records the outcome in one step. Otherwise it is
//     refused, as "missing", the terminal status, or "stale" (running, or
//     another attempt count). It also needs the run's entry to be the
//     delivery's, which the model does not see and need not: a run gets a
//     new entry only once an attempt of it has begun, which changes the
//     count.
//   - An operation whose outcome is unknown (the connection broke, the
//     process died) may take effect at any time after its call, or never:
//     the model applies what the script would do in the state it meets.
//   - go-redis resends a command whose reply was lost, so one recorded call
//     may be two executions of its script; the second reports what the
//     first did (an enqueue naming its own run as the owner, a finish
//     finding the status it wrote, a finish that began a retry finding
//     itself "stale", a cancel finding "cancelled"). The model counts such
//     a reply as the first execution's success.
//   - Reads taken after the load see the model's state: a run's status
//     (or, once retention removed the record, nothing for an ended run)
//     and a key's owner.
//
// What it does not model: which attempt's handler ran (a worker's side
// effects are at-least-once), retry counts and backoff, stream entries and
// leases (the heartbeat's business), and the clocks of the processes beyond
// the slack given to expiry.

const noExpiry = math.MaxInt64

// run is a run's state in the model.
type run struct {
	status   string
	attempt  int
	strategy string
	retain   int64 // ns
}

// state is the state of one partition. Steps never modify a state: they
// return a new one (runs is copied on write).
type state struct {
	owner  string
	lo, hi int64 // the owner's claim expires within [lo, hi] (unix ns)
	// floor is the earliest time the next operation can take effect at:
	// set when a claim is let expire before an operation that may have
	// taken effect before the claim's earliest expiry; 0 once an operation
	// called after it was applied (every later one then reaches it anyway).
	floor int64
	runs  map[string]run
}

func terminal(status string) bool {
	return status == "succeeded" || status == "failed" || status == "cancelled"
}

func (s state) with(id string, r run) state {
	runs := make(map[string]run, len(s.runs)+1)
	maps.Copy(runs, s.runs)
	runs[id] = r
	s.runs = runs
	return s
}

func stateEqual(a, b any) bool {
	x, y := a.(state), b.(state)
	return x.owner == y.owner && x.lo == y.lo && x.hi == y.hi && x.floor == y.floor && maps.Equal(x.runs, y.runs)
}

func stateHash(a any) uint64 {
	s := a.(state)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%d|%d|%d", s.owner, s.lo, s.hi, s.floor, len(s.runs))
	sum := h.Sum64()
	for id, r := range s.runs {
		g := fnv.New64a()
		fmt.Fprintf(g, "%s|%s|%d", id, r.status, r.attempt)
		sum += g.Sum64() // order-independent
	}
	return sum
}

// model builds the porcupine model; slack widens expiry windows (ns).
func model(slack int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{state{}} },
		Step: func(st, in, _ any) []any {
			s, op := st.(state), in.(*Op)
			if op.End() < s.floor {
				return nil // it was over before an expiry ordered before it
			}
			var out []any
			for _, pre := range expiries(s, op, slack) {
				for _, next := range step(pre, op, slack) {
					if op.Call >= next.floor {
						next.floor = 0
					}
					out = append(out, next)
				}
			}
			return out
		},
		Equal:             stateEqual,
		Hash:              stateHash,
		DescribeOperation: func(in, _ any) string { return in.(*Op).String() },
		DescribeState:     describe,
	}
	return nm.ToModel()
}

// describe describes one state of the model: porcupine's nondeterministic
// model calls it for each state of a set, and joins them itself.
func describe(st any) string {
	var b strings.Builder
	s := st.(state)
	fmt.Fprintf(&b, "owner=%q", s.owner)
	ids := make([]string, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, " %s:%s/%d", short(id), s.runs[id].status, s.runs[id].attempt)
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// expiries returns the states the partition may be in when op takes
// effect: the owner's claim may have expired, or must have.
func expiries(s state, op *Op, slack int64) []state {
	if s.owner == "" || s.hi == noExpiry && s.lo == noExpiry {
		return []state{s}
	}
	free := s
	free.owner, free.lo, free.hi = "", 0, 0
	switch {
	case s.hi != noExpiry && op.Call > s.hi:
		return []state{free}
	case op.End() >= s.lo:
		// The claim expired at s.lo or later: this operation, and every
		// one after it, took effect then or later.
		free.floor = max(s.floor, s.lo)
		return []state{s, free}
	}
	return []state{s}
}

func window(from, to, d, slack int64) (int64, int64) {
	if d <= 0 {
		return noExpiry, noExpiry
	}
	hi := int64(noExpiry)
	if to != math.MaxInt64 {
		hi = to + d + slack
	}
	return from + d - slack, hi
}

// end moves run id to a terminal status and releases its key per strategy,
// only while it owns it.
func end(s state, id, status string, op *Op, slack int64) state {
	r := s.runs[id]
	r.status = status
	s = s.with(id, r)
	if s.owner == id && r.strategy == "status" {
		if r.retain > 0 {
			s.lo, s.hi = window(op.Call, op.End(), r.retain, slack)
		} else {
			s.owner, s.lo, s.hi = "", 0, 0
		}
	}
	return s
}

// step applies op to s and returns the states it may lead to: none when
// the recorded result is impossible in s.
func step(s state, op *Op, slack int64) []state {
	res := op.Result
	unknown := res.Code == CodeUnknown || op.Return == 0
	one := func(x state) []state { return []state{x} }
	switch op.Kind {
	case KindEnqueue:
		return stepEnqueue(s, op, slack)

	case KindReadKey:
		if s.owner == res.Owner {
			return one(s)
		}
		return nil

	case KindReadRun:
		r, ok := s.runs[op.RunID]
		switch {
		case res.Status == "" && (!ok || terminal(r.status)):
			return one(s)
		case ok && r.status == res.Status:
			return one(s)
		}
		return nil
	}

	r, exists := s.runs[op.RunID]
	if !exists {
		// A script on a run no enqueue created (yet): only possible as a
		// no-op the run's own partition never sees.
		if unknown || res.Code == CodeError || res.Status == "missing" {
			return one(s)
		}
		return nil
	}
	if res.Code == CodeError {
		return one(s)
	}
	switch op.Kind {
	case KindStart:
		started := func(n int) state {
			r := r
			r.status, r.attempt = "running", n
			return s.with(op.RunID, r)
		}
		// The attempt start.lua begins. A resent start may have begun one
		// before, so a reply may say more.
		next := r.attempt + 1
		if op.Redelivered && r.status == "queued" {
			next++
		}
		switch {
		case unknown:
			if terminal(r.status) {
				return one(s)
			}
			return []state{s, started(next), end(s, op.RunID, "failed", op, slack)}
		case res.Code == CodeOK:
			if !terminal(r.status) && res.Attempt >= next {
				return one(started(res.Attempt))
			}
		case res.Status == "stale":
			if !terminal(r.status) {
				return one(s)
			}
		case res.Status == "exhausted":
			if !terminal(r.status) {
				return one(end(s, op.RunID, "failed", op, slack))
			}
		case res.Status == "missing":
			if terminal(r.status) {
				return one(s)
			}
		case terminal(res.Status):
			if r.status == res.Status {
				return one(s)
			}
		}
		return nil

	case KindFinish, KindRequeue:
		target := "queued"
		switch {
		case op.Kind == KindRequeue:
		case op.Outcome == "succeeded", op.Outcome == "failed":
			target = op.Outcome
		}
		writable := r.status == "running" && r.attempt == op.Attempt
		if op.Begins {
			writable = r.status == "queued" && r.attempt+1 == op.Attempt
		}
		// write records the outcome; for a finish that Begins, its attempt
		// becomes the run's latest in the same step.
		write := func() state {
			r := r
			r.attempt = op.Attempt
			if terminal(target) {
				return end(s.with(op.RunID, r), op.RunID, target, op, slack)
			}
			r.status = target
			return s.with(op.RunID, r)
		}
		switch {
		case unknown:
			if writable {
				return []state{s, write()}
			}
			return one(s)
		case res.Code == CodeOK:
			if writable && (res.Status == target || op.Kind == KindRequeue) {
				return one(write())
			}
		case res.Status == "missing":
			if terminal(r.status) {
				return one(s)
			}
		case op.Begins:
			switch {
			case res.Status == "stale" && !terminal(r.status) && !writable:
				return one(s)
			case res.Status == "stale" && writable && target == "queued":
				// resent: the first delivery began the attempt and queued
				// the retry, so the run no longer has the delivery's entry.
				return one(write())
			case terminal(res.Status) && r.status == res.Status:
				return one(s)
			case terminal(res.Status) && writable && res.Status == target: // resent
				return one(write())
			}
		case res.Status == "stale":
			if r.attempt != op.Attempt {
				return one(s)
			}
		default:
			if r.attempt == op.Attempt && r.status == res.Status && r.status != "running" {
				return one(s)
			}
			if writable && res.Status == target { // resent: the first delivery wrote it
				return one(write())
			}
		}
		return nil

	case KindCancel:
		switch {
		case unknown:
			if terminal(r.status) {
				return one(s)
			}
			return []state{s, end(s, op.RunID, "cancelled", op, slack)}
		case res.Code == CodeOK:
			if !terminal(r.status) {
				return one(end(s, op.RunID, "cancelled", op, slack))
			}
		case res.Status == "missing":
			if terminal(r.status) {
				return one(s)
			}
		case res.Status == r.status && terminal(r.status):
			return one(s)
		case res.Status == "cancelled" && !terminal(r.status): // resent
			return one(end(s, op.RunID, "cancelled", op, slack))
		}
		return nil
	}
	return one(s)
}

func stepEnqueue(s state, op *Op, slack int64) []state {
	res := op.Result
	id := op.RunID
	if _, dup := s.runs[id]; dup {
		// The run exists already: this call is a resend of the enqueue
		// that created it, and can only report that.
		if res.Code == CodeUnknown || op.Return == 0 || res.Code == CodeError || (res.Code == CodeRefused && res.Owner == id) {
			return []state{s}
		}
		if res.Code == CodeRefused && res.Owner == s.owner {
			return []state{s}
		}
		return nil
	}
	create := func() state {
		n := s.with(id, run{status: "queued", strategy: op.Strategy, retain: op.RetainMs * 1e6})
		if op.Keyed() {
			n.owner = id
			n.lo, n.hi = window(op.Call, op.End(), op.HoldMs*1e6, slack)
		}
		return n
	}
	held := op.Keyed() && s.owner != ""
	// A debounced trigger restarts the window of an owner that has not
	// started; the model cannot tell whether the owner's window already
	// passed and it was queued for a worker, which the script can.
	debounceable := held && op.Strategy == "debounce" && s.runs[s.owner].status == "queued"
	debounced := func() state {
		n := s
		n.lo, n.hi = window(op.Call, op.End(), op.HoldMs*1e6, slack)
		return n
	}
	// A superseding trigger cancels the owner it takes the key from.
	takeOver := func() state {
		old := s.owner
		n := create()
		if r, ok := n.runs[old]; ok && !terminal(r.status) {
			r.status = "cancelled"
			n = n.with(old, r)
		}
		return n
	}
	code := res.Code
	if op.Return == 0 {
		code = CodeUnknown
	}
	switch code {
	case CodeError:
		return []state{s}
	case CodeUnknown:
		if !held {
			return []state{s, create()}
		}
		if op.Policy == "supersede" {
			return []state{s, takeOver()}
		}
		if debounceable {
			return []state{s, debounced()}
		}
		return []state{s}
	case CodeOK:
		if !held && res.Superseded == "" {
			return []state{create()}
		}
		if held && op.Policy == "supersede" && res.Superseded == s.owner {
			return []state{takeOver()}
		}
		return nil
	case CodeRefused:
		if held && res.Owner == s.owner && res.Reply == int(engine.TriggerDebounced) {
			if debounceable {
				return []state{debounced()}
			}
			return nil
		}
		if held && res.Owner == s.owner {
			return []state{s}
		}
		if !held && res.Owner == id { // resent: the first delivery created it
			return []state{create()}
		}
		return nil
	}
	return nil
}
