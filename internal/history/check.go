package history

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/taskq/taskq/internal/engine"
)

// Options tune Check. Zero values mean the defaults.
type Options struct {
	// Slack widens every expiry window, for the millisecond resolution of
	// Redis expiry and clock reads in different processes (default 5ms).
	Slack time.Duration
	// Timeout bounds the linearizability search of one partition (default
	// 30s); a partition that runs out of time is reported as inconclusive.
	Timeout time.Duration
	// VisualizeDir, when set, receives porcupine's HTML rendering of each
	// partition found not linearizable.
	VisualizeDir string
}

// Rules a Violation can break.
const (
	RuleLinearizable   = "linearizable"    // no order of the partition's operations fits the model
	RuleRunLost        = "run-lost"        // a created run never reached a terminal status
	RuleDoubleOwner    = "double-owner"    // two runs certainly owned one key at the same instant
	RuleCollisionOwner = "collision-owner" // a collision named a run that did not own the key then
	RuleStaleWrite     = "stale-write"     // an attempt wrote after a newer attempt had started
	RuleDoubleAttempt  = "double-attempt"  // two operations each began the same attempt of a run
	RuleTriggerResult  = "trigger-result"  // a caller was told something other than what Redis did
)

// Violation is one broken rule.
type Violation struct {
	Rule      string
	Partition string
	Message   string
	// Ops describe the operations involved, one a line.
	Ops []string
}

func (v Violation) String() string {
	s := fmt.Sprintf("[%s] %s", v.Rule, v.Message)
	if v.Partition != "" {
		s = fmt.Sprintf("[%s] %s: %s", v.Rule, v.Partition, v.Message)
	}
	for _, o := range v.Ops {
		s += "\n    " + o
	}
	return s
}

// Report is what Check found.
type Report struct {
	Ops        int
	Partitions int
	// Client-level triggers: how many, and how they ended.
	Triggers, Accepted, Collisions, Failed, Indeterminate int
	// Runs created (as Redis saw it), and how many ended in each status.
	Runs  int
	Ended map[string]int
	// Lost lists runs created that never reached a terminal status.
	Lost []string
	// DoubleOwners counts instants where two runs owned one key.
	DoubleOwners int
	// StaleWrites counts writes accepted from a stale attempt.
	StaleWrites int
	// DoubleAttempts counts attempts begun by more than one operation.
	DoubleAttempts int
	Violations     []Violation
	Inconclusive   []string
}

// OK reports whether no rule was broken and every partition was decided.
func (r *Report) OK() bool { return len(r.Violations) == 0 && len(r.Inconclusive) == 0 }

// Err returns nil when OK, or an error listing what was found.
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history check failed: %d violation(s)", len(r.Violations))
	if len(r.Inconclusive) > 0 {
		fmt.Fprintf(&b, ", %d partition(s) inconclusive (%s)", len(r.Inconclusive), strings.Join(r.Inconclusive, ", "))
	}
	for i, v := range r.Violations {
		if i == 20 {
			fmt.Fprintf(&b, "\n... and %d more", len(r.Violations)-i)
			break
		}
		b.WriteString("\n" + v.String())
	}
	return fmt.Errorf("%s", b.String())
}

// Has reports whether some violation broke rule.
func (r *Report) Has(rule string) bool {
	for _, v := range r.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// Check checks a merged history (from ReadFiles or ReadDir).
func Check(ops []Op, opts Options) *Report {
	if opts.Slack == 0 {
		opts.Slack = 5 * time.Millisecond
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	c := newChecker(ops, opts)
	c.linearizability()
	c.invariants()
	c.triggers()
	return c.rep
}

// runInfo is what the history says about one run.
type runInfo struct {
	id       string
	key      string
	strategy string
	hold     int64 // ns
	retain   int64 // ns
	created  *Op   // the enqueue that created it (or may have)
	definite bool  // certainly created
	ended    bool
	// endOps are the operations that ended it, or may have (an operation
	// whose outcome is unknown): the earliest call among them bounds when
	// it could first have let its key go; one with an unknown outcome has
	// no return, so it never bounds the latest.
	endOps []*Op
	status string
	// [claimEnd, endLo] is when it certainly owned its key; [claimCall,
	// endHi] when it may have.
	claimCall, claimEnd, endLo, endHi int64
}

type checker struct {
	ops   []*Op
	opts  Options
	slack int64
	runs  map[string]*runInfo
	rep   *Report
}

func newChecker(all []Op, opts Options) *checker {
	c := &checker{opts: opts, slack: int64(opts.Slack), runs: map[string]*runInfo{}, rep: &Report{Ended: map[string]int{}}}
	for i := range all {
		c.ops = append(c.ops, &all[i])
	}
	sort.SliceStable(c.ops, func(i, j int) bool { return c.ops[i].Call < c.ops[j].Call })
	c.rep.Ops = len(c.ops)
	for _, op := range c.ops {
		if op.Kind != KindEnqueue {
			continue
		}
		created := op.Result.Code == CodeOK || (op.Result.Code == CodeRefused && op.Result.Owner == op.RunID)
		ri := c.runs[op.RunID]
		if ri == nil {
			if !created && op.Result.Code != CodeUnknown {
				continue
			}
			ri = &runInfo{id: op.RunID}
			c.runs[op.RunID] = ri
		}
		if ri.created == nil || created && !ri.definite {
			ri.created, ri.definite = op, created
			if op.Keyed() {
				ri.key = op.Key
			}
			ri.strategy, ri.hold, ri.retain = op.Strategy, op.HoldMs*1e6, op.RetainMs*1e6
		}
	}
	return c
}

func (c *checker) partition(op *Op) string {
	switch op.Kind {
	case KindTrigger:
		return ""
	case KindReadKey:
		return "key " + op.Key
	case KindEnqueue:
		if op.Keyed() {
			return "key " + op.Key
		}
	}
	if ri := c.runs[op.RunID]; ri != nil && ri.key != "" {
		return "key " + ri.key
	}
	return "run " + op.RunID
}

func (c *checker) linearizability() {
	parts := map[string][]porcupine.Operation{}
	procs := map[string]int{}
	for _, op := range c.ops {
		p := c.partition(op)
		if p == "" {
			continue
		}
		id, ok := procs[op.Process]
		if !ok {
			id = len(procs)
			procs[op.Process] = id
		}
		parts[p] = append(parts[p], porcupine.Operation{ClientId: id, Input: op, Output: op.Result, Call: op.Call, Return: op.End()})
	}
	c.rep.Partitions = len(parts)
	names := make([]string, 0, len(parts))
	for p := range parts {
		names = append(names, p)
	}
	sort.Strings(names)
	m := model(c.slack)
	for _, p := range names {
		res, info := porcupine.CheckOperationsVerbose(m, parts[p], c.opts.Timeout)
		switch res {
		case porcupine.Illegal:
			v := Violation{Rule: RuleLinearizable, Partition: p,
				Message: "no order of these operations fits the model of key ownership and run lifecycle"}
			for i, o := range parts[p] {
				if i == 40 {
					v.Ops = append(v.Ops, fmt.Sprintf("... %d more", len(parts[p])-i))
					break
				}
				v.Ops = append(v.Ops, o.Input.(*Op).String())
			}
			c.rep.Violations = append(c.rep.Violations, v)
			if c.opts.VisualizeDir != "" {
				name := strings.NewReplacer(" ", "_", "/", "_", ":", "_").Replace(p)
				_ = os.MkdirAll(c.opts.VisualizeDir, 0o755)
				_ = porcupine.VisualizePath(m, info, filepath.Join(c.opts.VisualizeDir, name+".html"))
			}
		case porcupine.Unknown:
			c.rep.Inconclusive = append(c.rep.Inconclusive, p)
		}
	}
}

// invariants checks the guarantees directly, one rule at a time.
func (c *checker) invariants() {
	started := map[string][]*Op{} // run -> operations that began an attempt of it
	for _, op := range c.ops {
		ri := c.runs[op.RunID]
		res := op.Result
		if begun(op) > 0 {
			started[op.RunID] = append(started[op.RunID], op)
		}
		switch op.Kind {
		case KindStart:
			if ri != nil && res.Code != CodeUnknown {
				ri.definite = true
			}
			if ri != nil && (res.Status == "exhausted" || res.Code == CodeUnknown) {
				ri.endOps = append(ri.endOps, op) // an unknown start may have found it exhausted
			}
			if terminal(res.Status) || res.Status == "exhausted" || res.Status == "missing" {
				c.markEnded(ri, res.Status)
			}
		case KindFinish:
			if ri == nil {
				continue
			}
			// A written outcome proves the run exists: a run whose
			// handler returned before its start was sent has no start to
			// prove it.
			if res.Code == CodeOK {
				ri.definite = true
			}
			if res.Code == CodeOK && terminal(res.Status) ||
				res.Code == CodeRefused && res.Status == op.Outcome && terminal(res.Status) ||
				res.Code == CodeUnknown && op.Outcome != "retry" {
				ri.endOps = append(ri.endOps, op)
			}
			if terminal(res.Status) || res.Status == "missing" {
				c.markEnded(ri, res.Status)
			}
		case KindCancel:
			if ri == nil {
				continue
			}
			if res.Code == CodeOK || res.Code == CodeUnknown || res.Status == "cancelled" {
				ri.endOps = append(ri.endOps, op)
			}
			if res.Code == CodeOK {
				c.markEnded(ri, "cancelled")
			} else if terminal(res.Status) || res.Status == "missing" {
				c.markEnded(ri, res.Status)
			}
		case KindReadRun:
			if ri == nil {
				continue
			}
			if res.Status != "" {
				ri.definite = true
			}
			if terminal(res.Status) || res.Code == CodeOK && res.Status == "" {
				c.markEnded(ri, res.Status)
			}
		}
	}

	// Ownership windows. A superseded run is cancelled by the trigger that
	// took its key.
	supersedes := map[string]*Op{}
	for _, op := range c.ops {
		if op.Kind == KindEnqueue && op.Result.Code == CodeOK && op.Result.Superseded != "" {
			if _, ok := supersedes[op.Result.Superseded]; !ok {
				supersedes[op.Result.Superseded] = op
				c.markEnded(c.runs[op.Result.Superseded], "cancelled")
			}
		}
	}
	// A debounced trigger restarts its owner's window: definitely when it
	// answered so, perhaps when its outcome is unknown.
	debounced := map[string][]*Op{}      // owner run -> triggers that debounced it
	maybeDebounced := map[string][]*Op{} // key -> debounce triggers of unknown outcome
	for _, op := range c.ops {
		if op.Kind != KindEnqueue || op.Strategy != "debounce" {
			continue
		}
		switch {
		case op.Result.Code == CodeRefused && op.Result.Reply == int(engine.TriggerDebounced):
			debounced[op.Result.Owner] = append(debounced[op.Result.Owner], op)
		case op.Result.Code == CodeUnknown || op.Return == 0:
			maybeDebounced[op.Key] = append(maybeDebounced[op.Key], op)
		}
	}
	byKey := map[string][]*runInfo{}
	ids := make([]string, 0, len(c.runs))
	for id := range c.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ri := c.runs[id]
		if !ri.definite {
			continue
		}
		c.rep.Runs++
		if ri.ended {
			if ri.status != "" && ri.status != "missing" && ri.status != "exhausted" {
				c.rep.Ended[ri.status]++
			} else if ri.status == "exhausted" {
				c.rep.Ended["failed"]++
			} else {
				c.rep.Ended["expired"]++
			}
		} else {
			c.rep.Lost = append(c.rep.Lost, id)
			c.violate(RuleRunLost, c.partition(ri.created), fmt.Sprintf("run %s was created but never reached a terminal status", id), c.opsOf(id))
		}
		if ri.key == "" {
			continue
		}
		cr := ri.created
		ri.claimCall, ri.claimEnd = cr.Call, cr.End()
		ri.endLo, ri.endHi = int64(math.MaxInt64), int64(math.MaxInt64)
		if ri.hold > 0 {
			ri.endLo, ri.endHi = cr.Call+ri.hold-c.slack, satAdd(cr.End(), ri.hold+c.slack)
		}
		if ri.strategy == "debounce" {
			c.extendDebounced(ri, debounced[id], maybeDebounced[ri.key])
		}
		if ri.strategy == "status" && len(ri.endOps) > 0 {
			lo, hi := int64(math.MaxInt64), int64(math.MaxInt64)
			for _, e := range ri.endOps {
				lo, hi = min(lo, e.Call), min(hi, e.End())
			}
			if ri.retain > 0 {
				lo, hi = lo+ri.retain-c.slack, satAdd(hi, ri.retain+c.slack)
			}
			ri.endLo, ri.endHi = min(ri.endLo, lo), min(ri.endHi, hi)
		}
		if s := supersedes[id]; s != nil {
			ri.endLo, ri.endHi = min(ri.endLo, s.Call), min(ri.endHi, s.End())
		}
		byKey[ri.key] = append(byKey[ri.key], ri)
	}

	// At most one owner: the intervals in which each run certainly owned
	// its key must not overlap.
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rs := byKey[k]
		sort.Slice(rs, func(i, j int) bool { return rs[i].claimEnd < rs[j].claimEnd })
		var prev *runInfo
		for _, r := range rs {
			if r.claimEnd == math.MaxInt64 {
				continue
			}
			if prev != nil && prev.endLo > r.claimEnd && r.endLo > r.claimEnd {
				c.rep.DoubleOwners++
				c.violate(RuleDoubleOwner, "key "+k, fmt.Sprintf("run %s claimed the key at %s while run %s held it until at least %s",
					r.id, ts(r.claimEnd), prev.id, ts(prev.endLo)), append(c.opsOf(prev.id), c.opsOf(r.id)...))
			}
			if prev == nil || r.endLo > prev.endLo {
				prev = r
			}
		}
	}

	// Collisions name a run that owned the key at the time.
	for _, op := range c.ops {
		if op.Kind == KindEnqueue && op.Result.Code == CodeRefused && op.Result.Owner != op.RunID {
			c.checkCollision(op, op.Result.Owner)
		}
	}

	// Fencing: no write from attempt n once attempt m > n had started,
	// whether a start or a finish that began it.
	for _, op := range c.ops {
		if (op.Kind != KindFinish && op.Kind != KindRequeue) || op.Result.Code != CodeOK {
			continue
		}
		for _, s := range started[op.RunID] {
			if m := begun(s); m > op.Attempt && s.Return != 0 && s.Return < op.Call {
				c.rep.StaleWrites++
				c.violate(RuleStaleWrite, c.partition(op), fmt.Sprintf("attempt %d of run %s wrote its outcome after attempt %d had started",
					op.Attempt, op.RunID, m), []string{s.String(), op.String()})
				break
			}
		}
	}

	// One owner per attempt: every begin takes a number no begin took
	// before, so two operations that each began attempt n of a run (two
	// starts, or a start and a finish that began it) both ran it as theirs.
	runIDs := make([]string, 0, len(started))
	for id := range started {
		runIDs = append(runIDs, id)
	}
	sort.Strings(runIDs)
	for _, id := range runIDs {
		first := map[int]*Op{}
		for _, op := range started[id] {
			n := begun(op)
			if f := first[n]; f != nil {
				c.rep.DoubleAttempts++
				c.violate(RuleDoubleAttempt, c.partition(op), fmt.Sprintf("attempt %d of run %s was begun twice", n, id),
					[]string{f.String(), op.String()})
				continue
			}
			first[n] = op
		}
	}
}

// begun returns the attempt op certainly began: a start's, or a finish's
// that began its attempt and wrote; 0 when it began none.
func begun(op *Op) int {
	switch {
	case op.Result.Code != CodeOK:
		return 0
	case op.Kind == KindStart:
		return op.Result.Attempt
	case op.Kind == KindFinish && op.Begins:
		return op.Attempt
	}
	return 0
}

// extendDebounced widens a debounce run's ownership window by the triggers
// that restarted it: each definite one holds the key for a window from its
// call at least; each of unknown outcome, made while the key may still have
// been held, may have held it for a window from its return (for ever, if
// it never returned).
func (c *checker) extendDebounced(ri *runInfo, definite, maybe []*Op) {
	for _, e := range definite {
		ri.endLo = max(ri.endLo, e.Call+ri.hold-c.slack)
		ri.endHi = max(ri.endHi, satAdd(e.End(), ri.hold+c.slack))
	}
	for changed := true; changed; {
		changed = false
		for _, e := range maybe {
			if e.Call < ri.claimCall || e.Call > ri.endHi {
				continue
			}
			hi := int64(math.MaxInt64)
			if e.Return != 0 {
				hi = satAdd(e.End(), ri.hold+c.slack)
			}
			if hi > ri.endHi {
				ri.endHi, changed = hi, true
			}
		}
	}
}

func satAdd(a, b int64) int64 {
	if a == math.MaxInt64 || a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func ts(t int64) string {
	if t == math.MaxInt64 {
		return "never"
	}
	return time.Unix(0, t).Format("15:04:05.000000")
}

func (c *checker) markEnded(ri *runInfo, status string) {
	if ri == nil {
		return
	}
	if !ri.ended || terminal(status) {
		ri.status = status
	}
	ri.ended = true
}

func (c *checker) checkCollision(op *Op, owner string) {
	o := c.runs[owner]
	switch {
	case o == nil || !o.definite:
		c.violate(RuleCollisionOwner, "key "+op.Key, fmt.Sprintf("a trigger was told run %s holds the key, but no trigger created that run", owner), []string{op.String()})
	case o.key != op.Key:
		c.violate(RuleCollisionOwner, "key "+op.Key, fmt.Sprintf("a trigger was told run %s holds the key, but that run claimed key %q", owner, o.key), []string{op.String()})
	case o.claimCall > op.End() || o.endHi < op.Call:
		c.violate(RuleCollisionOwner, "key "+op.Key, fmt.Sprintf("a trigger was told run %s holds the key, but that run owned it only from %s to %s at the latest",
			owner, ts(o.claimCall), ts(o.endHi)), append([]string{op.String()}, c.opsOf(owner)...))
	}
}

// triggers checks what callers were told against what Redis did.
func (c *checker) triggers() {
	byToken := map[string][]*Op{}
	for _, op := range c.ops {
		if op.Kind == KindEnqueue && op.Token != "" {
			byToken[op.Token] = append(byToken[op.Token], op)
		}
	}
	for _, op := range c.ops {
		if op.Kind != KindTrigger {
			continue
		}
		c.rep.Triggers++
		res := op.Result
		var createdBy *Op
		for _, e := range byToken[op.Token] {
			if e.Result.Code == CodeOK || (e.Result.Code == CodeRefused && e.Result.Owner == e.RunID) {
				createdBy = e
			}
		}
		switch res.Code {
		case CodeOK:
			c.rep.Accepted++
			ri := c.runs[res.RunID]
			if len(byToken[op.Token]) > 0 && (ri == nil || !ri.definite) {
				c.violate(RuleTriggerResult, c.partitionOfKey(op), fmt.Sprintf("the caller was given run %s, which Redis did not create", res.RunID), append([]string{op.String()}, c.opsOfToken(byToken, op.Token)...))
			}
		case CodeRefused:
			c.rep.Collisions++
			if createdBy != nil {
				c.violate(RuleTriggerResult, c.partitionOfKey(op), fmt.Sprintf("the caller was told of a collision with run %s, but the trigger created run %s", res.Owner, createdBy.RunID), append([]string{op.String()}, c.opsOfToken(byToken, op.Token)...))
			} else {
				c.checkCollision(op, res.Owner)
			}
		case CodeError:
			c.rep.Failed++
			if createdBy != nil {
				c.violate(RuleTriggerResult, c.partitionOfKey(op), fmt.Sprintf("the trigger failed with a definite error but created run %s", createdBy.RunID), append([]string{op.String()}, c.opsOfToken(byToken, op.Token)...))
			}
		default:
			c.rep.Indeterminate++
		}
	}
}

func (c *checker) partitionOfKey(op *Op) string {
	if op.Key != "" {
		return "key " + op.Key
	}
	return ""
}

func (c *checker) violate(rule, part, msg string, ops []string) {
	c.rep.Violations = append(c.rep.Violations, Violation{Rule: rule, Partition: part, Message: msg, Ops: ops})
}

func (c *checker) opsOf(runID string) []string {
	var out []string
	for _, op := range c.ops {
		if op.RunID == runID || op.Result.RunID == runID {
			out = append(out, op.String())
		}
		if len(out) == 12 {
			out = append(out, "...")
			break
		}
	}
	return out
}

func (c *checker) opsOfToken(byToken map[string][]*Op, tok string) []string {
	var out []string
	for _, op := range byToken[tok] {
		out = append(out, op.String())
	}
	return out
}
