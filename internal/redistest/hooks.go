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
