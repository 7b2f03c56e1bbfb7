package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// Redis refuses a script at maxmemory in two places: the whole EVALSHA
// before the script runs (a script with a shebang and no allow-oom flag),
// or its first write inside (a script without a shebang), raised by
// redis.call or returned by redis.pcall and passed on. All three are one
// typed, retryable error; a wrong type stays a wrong type.
func TestScriptErrorTypesEveryFormOfOOM(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"refused before it runs": "#!lua\nreturn redis.call('SET', KEYS[1], '1')",
		"raised by redis.call":   "return redis.call('SET', KEYS[1], '1')",
		"passed on from pcall":   "local r = redis.pcall('SET', KEYS[1], '1')\nif r.err then return r end\nreturn 'written'",
	} {
		err := rdb.Eval(ctx, src, []string{"k"}).Err()
		got := scriptError(err)
		if !errors.Is(got, engine.ErrOutOfMemory) || !errors.Is(got, engine.ErrUnavailable) || errors.Is(got, engine.ErrWrongType) {
			t.Errorf("%s: Redis answered %v, typed as %v; want ErrOutOfMemory", name, err, got)
		}
	}
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("a refused script wrote")
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, "h", "f", "v")
	for name, src := range map[string]string{
		"raised":    "return redis.call('SET', 'h', '1', 'GET')",
		"passed on": "local r = redis.pcall('INCR', 'h')\nreturn r",
	} {
		err := rdb.Eval(ctx, src, nil).Err()
		if got := scriptError(err); !errors.Is(got, engine.ErrWrongType) || errors.Is(got, engine.ErrUnavailable) {
			t.Errorf("wrong type %s: Redis answered %v, typed as %v; want ErrWrongType only", name, err, got)
		}
	}
}

// A server that cannot compile a shebang line (miniredis here, Redis before
// 7.0 too) is sent the scripts without it, from the first refusal on; a
// server that can gets them with it.
func TestScriptsGoWithoutTheirShebangWhereItDoesNotCompile(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := New(b.Client, b.Namespace)
		ctx := context.Background()
		if finishScript.plain == nil {
			t.Fatal("finish.lua has no shebang line")
		}
		for i := 0; i < 2; i++ {
			r, err := s.Finish(ctx, &engine.FinishParams{RunID: "nope", Attempt: 1, Outcome: engine.OutcomeSucceeded, Now: time.Now()})
			if err != nil || r.Written || r.Status != "missing" {
				t.Fatalf("finish of a missing run = %+v, %v", r, err)
			}
		}
		if got, want := s.plain.Load(), !b.Real(); got != want {
			t.Fatalf("scripts sent without their shebang: %v, want %v on %s", got, want, b.Name)
		}
	})
}
