package redistest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptFailure is a go-redis hook that, while Broken is set, fails every
// script call (EVAL, EVALSHA, FCALL) as a dropped connection would (io.EOF) and
// lets every other command through: Redis going away between two calls of
// one operation.
type ScriptFailure struct {
	Broken atomic.Bool
}

// DialHook dials as usual.
func (h *ScriptFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook fails script calls while Broken is set.
func (h *ScriptFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); h.Broken.Load() && IsScriptCall(name) {
			cmd.SetErr(io.EOF)
			return io.EOF
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook sends pipelines as usual.
func (h *ScriptFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Cutoff is a go-redis hook that, once Cut is set, fails every command and
// pipeline as a dropped connection would (io.EOF): a component using the
// client can no longer read or write anything, as if its process had died.
type Cutoff struct {
	Cut atomic.Bool
}

// DialHook dials as usual.
func (h *Cutoff) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook fails every command once Cut is set.
func (h *Cutoff) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.Cut.Load() {
			cmd.SetErr(io.EOF)
			return io.EOF
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook fails every pipeline once Cut is set.
func (h *Cutoff) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.Cut.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(io.EOF)
			}
			return io.EOF
		}
		return next(ctx, cmds)
	}
}

// SlotErrors is a go-redis hook that records every reply by which a Redis
// Cluster refuses a call for touching more than one slot: CROSSSLOT (a
// command's or a script's keys in two slots, or a transaction go-redis
// refuses to split) and a script reaching a key of another slot than its
// KEYS'. Cluster adds one to the client it makes and fails the test if it
// saw any: every call taskq makes touches one slot.
type SlotErrors struct {
	mu   sync.Mutex
	seen []string
}

// DialHook dials as usual.
func (h *SlotErrors) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a command's slot error.
func (h *SlotErrors) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record(cmd)
		return err
	}
}

// ProcessPipelineHook records the slot errors of a pipeline's commands,
// or a transaction's refusal once (go-redis gives each of its commands
// the error).
func (h *SlotErrors) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		tx := len(cmds) > 0 && cmds[0].Name() == "multi"
		for _, cmd := range cmds {
			if h.record(cmd) && tx {
				break
			}
		}
		return err
	}
}

// record records cmd's error if it is a slot error, and says whether it
// was.
func (h *SlotErrors) record(cmd redis.Cmder) bool {
	err := cmd.Err()
	if err == nil || !IsSlotError(err) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, fmt.Sprintf("%s: %v", cmdLine(cmd), err))
	return true
}

// Seen returns the calls refused so far, each with its error.
func (h *SlotErrors) Seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// IsSlotError reports whether err is a cluster's refusal of a call that
// touches more than one slot. Redis words it CROSSSLOT for a command's
// keys, and otherwise for a script's access to an undeclared key: "non
// local key" (a slot of another node) or "do not hash to the same slot".
func IsSlotError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "CROSSSLOT") || strings.Contains(msg, "non local key") ||
		strings.Contains(msg, "do not hash to the same slot")
}

// cmdLine is a command's name and first arguments, enough to find the
// call that was refused.
func cmdLine(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) > 6 {
		args = args[:6]
	}
	return strings.TrimSuffix(fmt.Sprintln(args...), "\n")
}

// IsScriptCall reports whether the command named name (as go-redis names
// it, in lower case) calls a script: EVAL, EVALSHA, or FCALL of a Redis
// function, as the store sends its scripts on Redis 7 and later.
func IsScriptCall(name string) bool {
	return name == "evalsha" || name == "eval" || name == "fcall"
}

// ScriptRan reports whether a script call that ended with err ran: it
// did not meet a server without the script (NOSCRIPT), the function
// ("Function not found") or functions at all (FCALL an unknown command),
// after which the store sends it again.
func ScriptRan(err error) bool {
	if err == nil {
		return true
	}
	msg := err.Error()
	return !strings.HasPrefix(msg, "NOSCRIPT") && !strings.HasPrefix(msg, "ERR Function not found") &&
		!strings.Contains(strings.ToLower(msg), "unknown command")
}
