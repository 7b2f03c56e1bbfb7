package history

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
)

// Hook is a go-redis hook that records the script calls that change runs
// and keys. Add it to the client a taskq Client or Worker uses:
//
//	rdb.AddHook(history.NewHook(rec))
//
// One recorded call covers go-redis's own retries of the command: if a reply
// is lost and the command is sent again, the script may have run twice, and
// the recorded reply is the last one. The model allows for that (see
// model.go).
type Hook struct {
	rec   *Recorder
	names map[string]string
	// BeforeSend, when set, is called with each recorded script call
	// just before it is sent, after its call was recorded, and returns the
	// context to send it with. Fault tests use it to pause a process at a
	// chosen point, and to let a command go out late whatever its
	// deadline, as a delayed packet would.
	BeforeSend func(ctx context.Context, op Op) context.Context
}

// NewHook returns a hook recording to rec.
func NewHook(rec *Recorder) *Hook {
	return &Hook{rec: rec, names: redisstore.ScriptNames()}
}

// DialHook is the identity: dialling is not recorded.
func (h *Hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook records script calls of interest: one operation per item of
// a script that takes many (enqueue, start, finish).
func (h *Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ops := h.parse(cmd.Args())
		if len(ops) == 0 {
			return next(ctx, cmd)
		}
		ps := make([]*Pending, len(ops))
		for i, op := range ops {
			ps[i] = h.rec.Call(op)
			if h.BeforeSend != nil {
				ctx = h.BeforeSend(ctx, ps[i].Op())
			}
		}
		err := next(ctx, cmd)
		h.returnAll(ops, ps, cmd, err)
		return err
	}
}

// ProcessPipelineHook records the script calls of a pipeline; each gets the
// pipeline's call and return times.
func (h *Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		type rec struct {
			ops []Op
			ps  []*Pending
			cmd redis.Cmder
		}
		var recs []rec
		for _, c := range cmds {
			ops := h.parse(c.Args())
			if len(ops) == 0 {
				continue
			}
			r := rec{ops: ops, ps: make([]*Pending, len(ops)), cmd: c}
			for i, op := range ops {
				r.ps[i] = h.rec.Call(op)
				if h.BeforeSend != nil {
					ctx = h.BeforeSend(ctx, r.ps[i].Op())
				}
			}
			recs = append(recs, r)
		}
		err := next(ctx, cmds)
		for _, r := range recs {
			h.returnAll(r.ops, r.ps, r.cmd, err)
		}
		return err
	}
}

// returnAll records the results of one script call's operations.
func (h *Hook) returnAll(ops []Op, ps []*Pending, cmd redis.Cmder, err error) {
	if cerr := cmd.Err(); cerr != nil {
		err = cerr
	}
	var replies []any
	if err == nil {
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			err = fmt.Errorf("unexpected command type %T", cmd)
		} else {
			replies = []any{c.Val()}
			if ops[0].Kind.batched() {
				replies = splitReplies(ops[0].Kind, cmd.Args(), c.Val())
			}
			if len(replies) != len(ops) {
				err = fmt.Errorf("unexpected reply %v for %d operations", c.Val(), len(ops))
			}
		}
	}
	for i, op := range ops {
		if err != nil {
			ps[i].Return(Result{Code: Classify(err), Err: err.Error()})
			continue
		}
		ps[i].Return(result(op.Kind, replies[i]))
	}
}

// splitReplies cuts the reply of a batched script call into one reply per
// item: each script replies with a flat array of values (see
// enqueue.lua, start.lua and finish.lua).
func splitReplies(kind Kind, args []any, v any) []any {
	flat, ok := v.([]any)
	if !ok {
		return flat
	}
	if kind == KindEnqueue {
		return redisstore.EnqueueReplies(flat)
	}
	var starts []redisstore.StartItem
	if kind == KindStart && len(args) >= 3 {
		if nkeys := int(num(args[2])); len(args) >= 3+nkeys {
			argv := make([]string, len(args)-3-nkeys)
			for i, v := range args[3+nkeys:] {
				argv[i] = str(v)
			}
			starts = redisstore.StartItems(nkeys, argv)
		}
	}
	var out []any
	for i := 0; len(flat) > 0; i++ {
		n := 2
		if kind == KindStart && i < len(starts) {
			n = starts[i].ReplyLen(num(flat[0]) == 1)
		} else if kind == KindStart {
			n = redisstore.StartItem{}.ReplyLen(false)
		}
		n = min(n, len(flat))
		if err, ok := flat[0].(error); ok {
			out = append(out, err)
		} else {
			out = append(out, flat[:n])
		}
		flat = flat[n:]
	}
	return out
}

// batched reports whether the script of kind takes many items per call and
// replies with an array of one reply per item.
func (k Kind) batched() bool {
	return k == KindEnqueue || k == KindStart || k == KindFinish
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	default:
		return fmt.Sprint(x)
	}
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	}
	n, _ := strconv.ParseInt(str(v), 10, 64)
	return n
}

// parse recognises a script call from its arguments (FCALL function
// numkeys keys... args..., EVALSHA sha numkeys ..., or EVAL source numkeys
// ... after a NOSCRIPT reply) and returns its operations, none for a call
// of no interest.
func (h *Hook) parse(args []any) []Op {
	if len(args) < 3 {
		return nil
	}
	var sha string
	switch strings.ToLower(str(args[0])) {
	case "evalsha", "fcall":
		sha = str(args[1]) // a function's name is in the names too
	case "eval":
		sum := sha1.Sum([]byte(str(args[1])))
		sha = hex.EncodeToString(sum[:])
	default:
		return nil
	}
	name := h.names[sha]
	nkeys := int(num(args[2]))
	if name == "" || len(args) < 3+nkeys {
		return nil
	}
	argv := args[3+nkeys:]
	sargv := make([]string, len(argv))
	for i, v := range argv {
		sargv[i] = str(v)
	}
	// Argument positions come from the store's layout (redisstore.EnqueueItems
	// and the others), which the scripts' KEYS/ARGV headers follow.
	var ops []Op
	switch name {
	case "enqueue":
		for _, it := range redisstore.EnqueueItems(sargv) {
			hold, _ := strconv.ParseInt(it.Hold, 10, 64)
			retain, _ := strconv.ParseInt(it.Retain, 10, 64)
			ops = append(ops, Op{Kind: KindEnqueue, RunID: it.RunID, Task: it.Task, Token: token(it.Input), Key: it.Key,
				Strategy: it.Strategy, HoldMs: hold, RetainMs: retain, Policy: it.Policy})
		}
	case "start":
		for _, it := range redisstore.StartItems(nkeys, sargv) {
			ops = append(ops, Op{Kind: KindStart, RunID: it.RunID, Redelivered: it.Redelivered})
		}
	case "finish":
		for _, it := range redisstore.FinishItems(sargv) {
			attempt, _ := strconv.Atoi(it.Attempt)
			ops = append(ops, Op{Kind: KindFinish, RunID: it.RunID, Attempt: attempt, Outcome: it.Outcome, Begins: it.Begins})
		}
	case "cancel":
		ops = append(ops, Op{Kind: KindCancel, RunID: redisstore.CancelRunID(sargv)})
	case "requeue":
		run, attempt := redisstore.RequeueRun(sargv)
		a, _ := strconv.Atoi(attempt)
		ops = append(ops, Op{Kind: KindRequeue, RunID: run, Attempt: a})
	}
	return ops
}

// token reads the "op" field of a JSON input, which load generators set to
// a unique name per trigger.
func token(raw string) string {
	if len(raw) > 64<<10 || !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		return ""
	}
	var v struct {
		Op string `json:"op"`
	}
	_ = json.Unmarshal([]byte(raw), &v)
	return v.Op
}

// Classify tells a definite failure from an unknown outcome. Only a
// script's own refusal to write (TASKQ_WRONGTYPE) is definite: go-redis
// resends a command whose reply was lost, so any other error (a broken
// connection, a deadline, NOSCRIPT or LOADING from a restarted server, or
// TASKQ_EXISTS from a resent enqueue) may follow an execution that did take
// effect.
func Classify(err error) Code {
	var re redis.Error
	if errors.As(err, &re) && strings.Contains(err.Error(), "TASKQ_WRONGTYPE") {
		return CodeError
	}
	return CodeUnknown
}

// result reads one operation's reply: an error reply of its own, or the
// script's reply for it.
func result(kind Kind, v any) Result {
	if err, ok := v.(error); ok {
		return Result{Code: Classify(err), Err: err.Error()}
	}
	reply, ok := v.([]any)
	if !ok || len(reply) < 2 {
		return Result{Code: CodeUnknown, Err: fmt.Sprintf("unexpected reply %v", v)}
	}
	code := num(reply[0])
	switch kind {
	case KindEnqueue:
		r := Result{Reply: int(code)}
		if code == 1 {
			r.Code = CodeOK
			if len(reply) > 2 {
				r.Superseded = str(reply[2])
			}
			return r
		}
		r.Code, r.Owner = CodeRefused, str(reply[1])
		return r
	case KindStart:
		if code == 1 {
			return Result{Code: CodeOK, Attempt: int(num(reply[1])), Status: "running"}
		}
		return Result{Code: CodeRefused, Status: str(reply[1])}
	default: // finish, cancel, requeue: {1, status or entry} or {0, reason}
		if code == 1 {
			st := str(reply[1])
			if kind == KindRequeue {
				st = "queued"
			}
			return Result{Code: CodeOK, Status: st}
		}
		return Result{Code: CodeRefused, Status: str(reply[1])}
	}
}
