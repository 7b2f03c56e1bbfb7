package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
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

// scriptLog records the script calls a client sends, alone or in
// pipelines: the command and the script it names (redisstore.ScriptNames),
// and whether it ran (redistest.ScriptRan).
type scriptLog struct {
	names map[string]string
	mu    sync.Mutex
	calls []loggedCall
}

type loggedCall struct {
	cmd, script string
	ran         bool
}

func newScriptLog() *scriptLog { return &scriptLog{names: redisstore.ScriptNames()} }

func (l *scriptLog) add(cmd redis.Cmder, err error) {
	a := cmd.Args()
	name := strings.ToLower(cmd.Name())
	if !redistest.IsScriptCall(name) || len(a) < 2 {
		return
	}
	script := l.names[fmt.Sprint(a[1])]
	if name == "eval" {
		sum := sha1.Sum([]byte(fmt.Sprint(a[1])))
		script = l.names[hex.EncodeToString(sum[:])]
	}
	l.mu.Lock()
	l.calls = append(l.calls, loggedCall{cmd: name, script: script, ran: redistest.ScriptRan(err)})
	l.mu.Unlock()
}

func (l *scriptLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		l.add(cmd, err)
		return err
	}
}
func (l *scriptLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			l.add(c, c.Err())
		}
		return err
	}
}

// take returns the calls logged so far and forgets them.
func (l *scriptLog) take() []loggedCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// A run's life (trigger, read, start, finish, and a batch across two
// partitions) goes out as FCALLs of the store's functions on Redis 7, each
// naming its script, and nothing is sent with EVALSHA there; on a server
// without functions (miniredis) the store tries FCALL once, then sends
// EVALSHA only.
func TestScriptsGoOutAsFunctionsWhereTheServerHasThem(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		rdb := b.NewClient(t)
		log := newScriptLog()
		rdb.AddHook(log)
		f := newFixture(t, &redistest.Backend{Client: rdb, Namespace: b.Namespace})
		p := f.params("fn", "k1", engine.StrategyStatus)
		f.enqueue(p)
		d := f.read("fn", "w1")[0]
		st := f.start(d, "w1")
		f.finish(p.RunID, st.Attempt, engine.OutcomeSucceeded, `{}`)
		two := redisstore.NewPartitioned(rdb, b.Namespace+"-two", 2)
		ps := f.statusRuns("fn", "a", "b", "c", "d", "e", "f")
		if _, errs := two.EnqueueBatch(f.ctx, ps); errs[0] != nil {
			t.Fatal(errs)
		}

		calls := log.take()
		ran := map[string]bool{}
		tried := 0
		for _, c := range calls {
			if c.ran {
				ran[c.script] = true
			}
			switch {
			case b.Name == "miniredis" && c.cmd == "fcall":
				tried++
				if c.ran {
					t.Errorf("miniredis ran an FCALL of %s", c.script)
				}
			case b.Name != "miniredis" && c.cmd != "fcall":
				t.Errorf("%s of %s sent to a server with functions", c.cmd, c.script)
			case c.script == "":
				t.Errorf("%s of a script the store does not name", c.cmd)
			}
		}
		for _, name := range []string{"enqueue", "start", "finish"} {
			if !ran[name] {
				t.Errorf("no call of %s ran; calls %+v", name, calls)
			}
		}
		if b.Name == "miniredis" && tried > 3 {
			// The first store tries one call; the second one pipeline,
			// of one call per partition.
			t.Errorf("%d FCALLs tried on a server without functions, want at most 3", tried)
		}
	})
}

// A server that lost the store's functions (a restart without persistence,
// as a failover to a node that never had them) answers "Function not
// found"; the store loads the library again and the call runs, alone and
// in a pipeline spread over partitions. Nothing is lost or run twice: the
// triggers after the restart create one run each.
func TestFunctionsAreLoadedAgainAfterTheServerLostThem(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "--appendonly", "no", "--save", "")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	log := newScriptLog()
	rdb.AddHook(log)
	ctx := context.Background()
	s := redisstore.NewPartitioned(rdb, "fnload", 4)
	f := newFixture(t, &redistest.Backend{Client: rdb, Namespace: "fnload-home"})
	f.enqueue(f.params("fn", "before", engine.StrategyStatus))

	for round, lose := range []func(){
		func() { srv.Restart() },
		func() {
			if err := rdb.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		},
	} {
		lose()
		log.take()
		if r := f.enqueue(f.params("fn", fmt.Sprint("alone-", round), engine.StrategyStatus)); !r.Accepted {
			t.Fatalf("round %d: trigger after the functions were lost: %+v", round, r)
		}
		ps := f.statusRuns("fn", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8")
		for _, p := range ps {
			p.Key = fmt.Sprint(p.Key, "-", round)
		}
		res, errs := s.EnqueueBatch(ctx, ps)
		for i := range ps {
			if errs[i] != nil || !res[i].Accepted {
				t.Fatalf("round %d: batched trigger %d after the functions were lost: %+v, %v", round, i, res[i], errs[i])
			}
		}
		missed := 0
		for _, c := range log.take() {
			if c.cmd != "fcall" {
				t.Errorf("round %d: %s of %s: the store fell back from functions", round, c.cmd, c.script)
			}
			if !c.ran {
				missed++
			}
		}
		if missed == 0 {
			t.Errorf("round %d: no call met the server without its functions; the test lost them in vain", round)
		}
		for _, p := range ps {
			if _, err := s.GetRun(ctx, p.RunID); err != nil {
				t.Errorf("round %d: run of %s: %v", round, p.Key, err)
			}
		}
	}
}

// An ACL user that may not load or call functions gets its scripts sent
// with EVALSHA, after one refused try: its triggers work, and later calls
// pay nothing for the try.
func TestAUserWithoutFunctionsGetsItsScriptsAsEvalSha(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	for _, c := range []struct{ user, rules string }{
		{"noload", "-function|load"},
		{"nofcall", "-fcall"},
	} {
		t.Run(c.user, func(t *testing.T) {
			if err := admin.Do(ctx, "ACL", "SETUSER", c.user, "on", ">pw", "~*", "&*", "+@all", c.rules).Err(); err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: c.user, Password: "pw"})
			t.Cleanup(func() { _ = rdb.Close() })
			log := newScriptLog()
			rdb.AddHook(log)
			f := newFixture(t, &redistest.Backend{Client: rdb, Namespace: "acl-" + c.user})
			for i := range 3 {
				if r := f.enqueue(f.params("fn", fmt.Sprint("k", i), engine.StrategyStatus)); !r.Accepted {
					t.Fatalf("trigger %d: %+v", i, r)
				}
			}
			calls := log.take()
			fcalls := 0
			for _, call := range calls {
				if call.cmd == "fcall" {
					fcalls++
				}
			}
			if fcalls > 1 || calls[len(calls)-1].cmd != "evalsha" {
				t.Fatalf("calls %+v: want at most one FCALL, then EVALSHA", calls)
			}
		})
	}
}

// missingFunctions is a go-redis hook that answers every FCALL as a node
// without the function would, without sending it.
type missingFunctions struct{}

func (missingFunctions) DialHook(next redis.DialHook) redis.DialHook { return next }
func (missingFunctions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.ToLower(cmd.Name()) == "fcall" {
			err := errors.New("ERR Function not found")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (missingFunctions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A function still missing after its library was loaded (the call went to
// a node the load did not reach, as while a slot moves) did not run: the
// call is sent as a script instead, and the trigger is not failed.
func TestACallWhoseFunctionStaysMissingIsSentAsAScript(t *testing.T) {
	b := redistest.Real(t)
	rdb := b.NewClient(t)
	log := newScriptLog()
	rdb.AddHook(log)
	rdb.AddHook(missingFunctions{})
	f := newFixture(t, &redistest.Backend{Client: rdb, Namespace: b.Namespace})
	if r := f.enqueue(f.params("fn", "k", engine.StrategyStatus)); !r.Accepted {
		t.Fatalf("trigger: %+v", r)
	}
	ran := false
	for _, c := range log.take() {
		if c.cmd == "fcall" && c.ran {
			t.Fatalf("an FCALL ran: %+v", c)
		}
		ran = ran || c.ran && c.script == "enqueue" && (c.cmd == "evalsha" || c.cmd == "eval")
	}
	if !ran {
		t.Fatal("the trigger was not sent as a script")
	}
}

// FUNCTION FLUSH, sent again and again while triggers are made from several
// goroutines, loses no trigger and doubles none: a call that finds the
// library gone loads it again and is sent again, and a call that ran is
// not. The server is one of the test's own, as FUNCTION FLUSH empties the
// whole server.
func TestTriggersSurviveFunctionFlush(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	st := redisstore.New(rdb, "flush")
	if err := st.EnsureGroup(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	const writers, batches, batch = 4, 50, 8
	done := make(chan struct{})
	flushes := make(chan int)
	go func() {
		n := 0
		defer func() { flushes <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := rdb.FunctionFlush(ctx).Err(); err != nil {
				t.Errorf("FUNCTION FLUSH: %v", err)
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				ps := make([]*engine.EnqueueParams, batch)
				for i := range ps {
					id := fmt.Sprintf("run-%d-%d-%d", w, b, i)
					ps[i] = &engine.EnqueueParams{RunID: id, Task: "t", Input: []byte(`{}`), Meta: []byte(`{}`),
						Key: id, Strategy: engine.StrategyStatus, Hold: time.Hour, MaxDeliveries: 10,
						Retention: time.Hour, Now: time.Now()}
				}
				res, errs := st.EnqueueBatch(ctx, ps)
				for i := range ps {
					if errs[i] != nil || !res[i].Accepted {
						t.Errorf("trigger %s: %+v, %v", ps[i].RunID, res[i], errs[i])
					}
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	if n := <-flushes; n == 0 {
		t.Fatal("no FUNCTION FLUSH was sent while the triggers were made")
	}
	const want = writers * batches * batch
	k := st.Keys()
	if n := rdb.XLen(ctx, k.Stream("t")).Val(); n != want {
		t.Errorf("the task stream holds %d entries, want %d", n, want)
	}
	if n := rdb.ZCard(ctx, k.Runs()).Val(); n != want {
		t.Errorf("the runs index holds %d runs, want %d", n, want)
	}
}
