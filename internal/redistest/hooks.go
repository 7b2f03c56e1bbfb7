package redistest

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptFailure is a go-redis hook that, while Broken is set, fails every
// script call (EVAL, EVALSHA) as a dropped connection would (io.EOF) and
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
		if name := cmd.Name(); h.Broken.Load() && (name == "evalsha" || name == "eval") {
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
