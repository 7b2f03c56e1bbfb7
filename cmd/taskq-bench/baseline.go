package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
)

// baseline builds the enqueue script calls exactly as the store would and
// sends them with a plain go-redis client, in the store's form: FCALL of
// the script's function where the server has functions, else EVALSHA.
type baseline struct {
	e     *env
	rdb   *redis.Client
	shape *redisstore.Store // builds KEYS/ARGV only; never sends
	sha   string
	fn    string // the function to FCALL; "" to send EVALSHA
	// want is the expected first element of the reply: 1 created, 0 rejected.
	want int64
}

func newBaseline(ctx context.Context, e *env, want int64) (*baseline, error) {
	src, err := redisstore.ScriptSource("enqueue")
	if err != nil {
		return nil, err
	}
	rdb := e.redisClient()
	sha, err := rdb.ScriptLoad(ctx, src).Result()
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(src))
	if sha != hex.EncodeToString(sum[:]) {
		_ = rdb.Close()
		return nil, fmt.Errorf("script SHA mismatch: server %s", sha)
	}
	b := &baseline{e: e, rdb: rdb, shape: redisstore.New(rdb, e.ns), sha: sha, want: want}
	fn, lib, err := redisstore.ScriptFunction("enqueue")
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	if rdb.FunctionLoadReplace(ctx, lib).Err() == nil {
		b.fn = fn
	}
	return b, nil
}

// send queues or sends one call of the script on c (the client or a
// pipeline).
func (b *baseline) send(ctx context.Context, c redis.Cmdable, keys []string, args []any) *redis.Cmd {
	if b.fn != "" {
		return c.FCall(ctx, b.fn, keys, args...)
	}
	return c.EvalSha(ctx, b.sha, keys, args...)
}

// args builds what client.RunNoWait would send for the trigger with key k.
func (b *baseline) args(k string) ([]string, []any) {
	def := b.e.noop.Definition()
	id, _ := uuid.NewV7()
	p := &engine.EnqueueParams{
		RunID: id.String(), Task: def.Name, Input: []byte(`{"id":"` + k + `"}`), Meta: []byte("{}"),
		Key: k, Strategy: engine.StrategyStatus, Hold: taskdef.Hold(def.Idempotency),
		Retries: def.Retries, MaxDeliveries: def.MaxDeliveries, Timeout: def.Timeout,
		Retention: client.RetentionDefault, Now: time.Now(), Policy: engine.PolicyReject,
	}
	return b.shape.EnqueueCall(p)
}

func (b *baseline) check(v any) error {
	// The script replies with an array of one reply per trigger.
	if all, ok := v.([]any); ok && len(all) == 1 {
		v = all[0]
	}
	r, ok := v.([]any)
	if !ok || len(r) < 2 {
		return fmt.Errorf("unexpected reply %v", v)
	}
	if n, _ := r[0].(int64); n != b.want {
		return fmt.Errorf("reply %v, want outcome %d", r, b.want)
	}
	return nil
}

func (b *baseline) call(keys func(int) string) func(ctx context.Context, i int) error {
	return func(ctx context.Context, i int) error {
		k, a := b.args(keys(i))
		v, err := b.send(ctx, b.rdb, k, a).Result()
		if err != nil {
			return err
		}
		return b.check(v)
	}
}

// pipelined sends triggers 0..n-1 in pipelines of size calls from
// cfg.pipelines goroutines: about the most Redis does with this script, for
// reference.
func (b *baseline) pipelined(ctx context.Context, label string, n, size int, keys func(int) string) (time.Duration, error) {
	batches := (n + size - 1) / size
	return drive(ctx, b.e, label, batches, b.e.cfg.pipelines, int64(size), func(ctx context.Context, bi int) error {
		pipe := b.rdb.Pipeline()
		lo, hi := bi*size, min(n, (bi+1)*size)
		cmds := make([]*redis.Cmd, 0, hi-lo)
		for i := lo; i < hi; i++ {
			k, a := b.args(keys(i))
			cmds = append(cmds, b.send(ctx, pipe, k, a))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for _, c := range cmds {
			if err := b.check(c.Val()); err != nil {
				return err
			}
		}
		return nil
	})
}

// drive runs calls 0..n-1 from conc goroutines and returns the elapsed
// time. Each call counts per units in the progress meter.
func drive(ctx context.Context, e *env, label string, n, conc int, per int64, call func(ctx context.Context, i int) error) (time.Duration, error) {
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	m := startMeter(e, label, int64(n)*per)
	defer m.stop()
	var wg sync.WaitGroup
	began := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := call(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("call %d: %w", i, err) })
					return
				}
				m.done.Add(per)
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return time.Since(began), firstErr
}

// processCPU returns this process's user+system CPU seconds so far. The
// benchmark's own bookkeeping is included; it is the same for every variant.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// commandCalls returns how many times the server ran a command so far (all
// clients: on a shared server, others' calls count too).
func commandCalls(ctx context.Context, e *env, name string) int64 {
	info, err := e.admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0
	}
	v := infoField(info, "cmdstat_"+name)
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, _ := strconv.ParseInt(calls, 10, 64)
	return n
}

// redisCPU returns the server's user+system CPU seconds so far.
func redisCPU(ctx context.Context, e *env) float64 {
	info, err := e.admin.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	u, _ := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
	s, _ := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
	return u + s
}
