package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// callLog records the script calls a client sends: KEYS count and ARGV.
type callLog struct {
	mu    sync.Mutex
	calls [][]any
}

func (l *callLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *callLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if redistest.IsScriptCall(strings.ToLower(cmd.Name())) {
			l.mu.Lock()
			l.calls = append(l.calls, cmd.Args())
			l.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (l *callLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if redistest.IsScriptCall(strings.ToLower(cmd.Name())) {
				l.mu.Lock()
				l.calls = append(l.calls, cmd.Args())
				l.mu.Unlock()
			}
		}
		return next(ctx, cmds)
	}
}

// last returns the KEYS count and ARGV of the last script call.
func (l *callLog) last(t *testing.T) (int, []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		t.Fatal("no script call was sent")
	}
	args := l.calls[len(l.calls)-1]
	var nkeys int
	_, _ = fmt.Sscan(fmt.Sprint(args[2]), &nkeys)
	var argv []string
	for _, a := range args[3+nkeys:] {
		if raw, ok := a.([]byte); ok {
			argv = append(argv, string(raw))
		} else {
			argv = append(argv, fmt.Sprint(a))
		}
	}
	return nkeys, argv
}

// The readers of script calls find every field where the store put it, for
// batches of more than one item, so a tool reading calls (internal/history)
// follows the layout.
func TestScriptCallsReadBackWhatTheStoreSent(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		log := &callLog{}
		b.Client.AddHook(log)
		f := newFixture(t, b)
		ps := f.statusRuns("calls", "k:1", "k:2")
		ps[1].Policy = engine.PolicyAttach
		if _, errs := f.s.EnqueueBatch(f.ctx, ps); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		nkeys, argv := log.last(t)
		// A call's one key is its partition's runs index; the script builds
		// the triggers' own keys.
		if nkeys != 1 || argv[0] != f.k.Prefix() {
			t.Errorf("enqueue call with %d keys and prefix %q, want 1 key and %q", nkeys, argv[0], f.k.Prefix())
		}
		enq := redisstore.EnqueueItems(argv)
		if len(enq) != 2 {
			t.Fatalf("enqueue items = %+v", enq)
		}
		for i, it := range enq {
			p := ps[i]
			if it.RunID != p.RunID || it.Task != p.Task || it.Input != string(p.Input) || it.Key != p.Key ||
				it.Strategy != string(p.Strategy) || it.Hold != fmt.Sprint(p.Hold.Milliseconds()) {
				t.Errorf("enqueue item %d = %+v, sent %+v", i, it, p)
			}
		}
		if enq[1].Policy != string(engine.PolicyAttach) {
			t.Errorf("enqueue item 1 policy = %q", enq[1].Policy)
		}

		ds := f.read("calls", "w1")
		if len(ds) != 2 {
			t.Fatalf("read %d deliveries", len(ds))
		}
		if _, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		nkeys, argv = log.last(t)
		st := redisstore.StartItems(nkeys, argv)
		if len(st) != 2 || st[0].RunID != ds[0].RunID || st[1].RunID != ds[1].RunID || st[0].Redelivered || st[0].MaxDeliveries == "" {
			t.Fatalf("start items = %+v for %+v", st, ds)
		}

		fs := []*engine.FinishParams{
			{RunID: ds[0].RunID, Attempt: 1, Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: f.now},
			{RunID: ds[1].RunID, Attempt: 1, Outcome: engine.OutcomeRetry, Payload: []byte(`boom`), Now: f.now,
				RetryAt: f.now.Add(time.Minute)},
		}
		if _, errs := f.s.FinishBatch(f.ctx, fs); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		_, argv = log.last(t)
		fin := redisstore.FinishItems(argv)
		if len(fin) != 2 || fin[0].RunID != fs[0].RunID || fin[0].Attempt != "1" || fin[0].Outcome != string(fs[0].Outcome) ||
			fin[1].Outcome != string(fs[1].Outcome) || fin[0].Begins {
			t.Fatalf("finish items = %+v", fin)
		}

		p := f.params("calls", "", engine.StrategyNone)
		f.enqueue(p)
		if _, err := f.s.Cancel(f.ctx, p.RunID, "test", f.now); err != nil {
			t.Fatal(err)
		}
		if _, argv := log.last(t); redisstore.CancelRunID(argv) != p.RunID {
			t.Fatalf("cancel run = %q, want %q", redisstore.CancelRunID(argv), p.RunID)
		}
	})
}
