package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Helper process mode: the test binary re-runs itself as a worker that
// prints "started <run id> <step id>" and then hangs, to be SIGKILLed.
const (
	workerHelperEnv = "TASKQ_TEST_WORKER_HELPER"
	workerNSEnv     = "TASKQ_TEST_WORKER_NS"
	workerURLEnv    = "TASKQ_TEST_WORKER_URL"
)

var crashTask = task.Must[in, out]("crash", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})

// durableTask charges once (a durable step) and then consumes signals.
var durableTask = task.Must[in, durableOut]("durable", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})

type durableOut struct {
	RunStep    string   `json:"runStep"`
	ChargeStep string   `json:"chargeStep"`
	Receipt    string   `json:"receipt"`
	Signals    []string `json:"signals"`
}

// durableHandler charges through a step (counting real executions in
// Redis), then reads want signals; report is told of each stage.
func durableHandler(b interface{ Incr(string) int64 }, want int, report func(string)) func(worker.Context, in) (durableOut, error) {
	return func(ctx worker.Context, x in) (durableOut, error) {
		res := durableOut{RunStep: ctx.StepID()}
		receipt, err := worker.Step(ctx, "charge", func(_ context.Context, stepID string) (string, error) {
			res.ChargeStep = stepID
			return fmt.Sprintf("receipt-%d", b.Incr("charges")), nil
		})
		if err != nil {
			return res, err
		}
		res.Receipt = receipt
		report("step " + receipt + " " + res.ChargeStep)
		for len(res.Signals) < want {
			sig, err := ctx.NextSignal()
			if err != nil {
				return res, err
			}
			res.Signals = append(res.Signals, sig.SignalID)
			report("signal " + sig.SignalID)
		}
		return res, nil
	}
}

type counter struct {
	rdb redis.UniversalClient
	key string
}

func (c counter) Incr(name string) int64 { return c.rdb.Incr(context.Background(), c.key+name).Val() }

func TestMain(m *testing.M) {
	switch os.Getenv(workerHelperEnv) {
	case "":
		os.Exit(m.Run())
	case "durable":
		os.Exit(durableWorker())
	case "ratelimit":
		os.Exit(rateLimitedWorker())
	case "concurrency":
		os.Exit(concurrencyWorker())
	case "spawner":
		os.Exit(spawnerWorker())
	case "dag":
		os.Exit(dagWorker())
	case "nap":
		os.Exit(napWorker())
	case "stock":
		os.Exit(stockWorker())
	default:
		os.Exit(hangingWorker())
	}
}

// durableWorker runs durableTask, printing each stage, and waits for more
// signals than will come, to be SIGKILLed.
func durableWorker() int {
	// One node's URL or the cluster's.
	conn, err := connect.Open(connect.Options{URL: os.Getenv(workerURLEnv)})
	if err != nil {
		return 1
	}
	rdb := conn.Redis
	ns := os.Getenv(workerNSEnv)
	w, err := worker.New(worker.Options{Redis: rdb, Namespace: ns, LeaseDuration: time.Second, Logger: quiet})
	if err != nil {
		return 1
	}
	var mu sync.Mutex
	worker.Handle(w, durableTask, durableHandler(counter{rdb, "taskq:{" + ns + "}:test:"}, 1000, func(s string) {
		mu.Lock()
		fmt.Println(s)
		mu.Unlock()
	}))
	if err := w.Run(context.Background()); err != nil {
		return 1
	}
	return 0
}

func hangingWorker() int {
	w, err := worker.New(worker.Options{
		RedisURL: os.Getenv(workerURLEnv), Namespace: os.Getenv(workerNSEnv),
		LeaseDuration: time.Second, Logger: quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	worker.Handle(w, crashTask, func(ctx worker.Context, x in) (out, error) {
		fmt.Printf("started %s %s\n", ctx.RunID(), ctx.StepID())
		select {} // hang until killed
	})
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func redisURL() string {
	if u := os.Getenv(redistest.URLEnv); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// helperWorker is a worker process started from the test binary in the
// given helper mode; Next returns the next line it prints.
type helperWorker struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
}

func startHelperWorker(t *testing.T, mode string, b *redistest.Backend) *helperWorker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerHelperEnv+"="+mode, workerNSEnv+"="+b.Namespace, workerURLEnv+"="+b.URL)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperWorker{t: t, cmd: cmd, lines: make(chan string, 16)}
	t.Cleanup(h.Kill)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	return h
}

func (h *helperWorker) Next() string {
	h.t.Helper()
	select {
	case l := <-h.lines:
		return l
	case <-time.After(10 * time.Second):
		h.t.Fatal("helper worker went quiet")
		return ""
	}
}

// Kill ends the process with SIGKILL, as a crash would.
func (h *helperWorker) Kill() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	}
}

// A worker process SIGKILLed mid-run: after its lease lapses the run
// completes on another worker, with the same step ID, and its key is held
// until then.
func TestKilledWorkersRunIsRedelivered(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)

		helper := startHelperWorker(t, "hang", b)
		ref, err := client.RunNoWait(ctx, c, crashTask, in{ID: "crash-1"})
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(helper.Next())
		if len(f) != 3 || f[1] != ref.ID() {
			t.Fatalf("helper said %v", f)
		}
		firstStep := f[2]
		helper.Kill()
		killedAt := time.Now()

		if _, err := client.RunNoWait(ctx, c, crashTask, in{ID: "crash-1"}); err == nil {
			t.Fatal("key was free while the crashed run was still active")
		}
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, crashTask, func(ctx worker.Context, x in) (out, error) {
				return out{ID: x.ID, StepID: ctx.StepID(), By: "survivor"}, nil
			})
		})
		res, err := ref.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.StepID != firstStep || res.By != "survivor" {
			t.Fatalf("redelivered result = %+v, want step ID %q from the survivor", res, firstStep)
		}
		if d := time.Since(killedAt); d < 900*time.Millisecond {
			t.Fatalf("run redelivered after %v, before the 1s lease lapsed", d)
		}
		info, _ := ref.Get(ctx)
		if info.Attempt != 2 {
			t.Fatalf("attempt = %d, want 2", info.Attempt)
		}
	})
}

// A slow worker that keeps heartbeating keeps its run, however long it
// takes, while another worker is idle and eager.
func TestSlowLiveWorkerKeepsItsRun(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("slow-live", task.Options{})
		// A lease of a second: heartbeats every third of it must get through
		// under -race on a busy machine, where a shorter one lapsed.
		started := make(chan struct{}, 2)
		startWorker(t, b, worker.Options{Name: "slow", LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				started <- struct{}{}
				time.Sleep(4 * time.Second) // four leases
				return out{By: "slow"}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		stolen := make(chan struct{}, 1)
		startWorker(t, b, worker.Options{Name: "eager", LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				stolen <- struct{}{}
				return out{By: "eager"}, nil
			})
		})
		res, err := ref.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := ref.Get(ctx)
		if res.By != "slow" || info.Attempt != 1 || len(stolen) != 0 {
			t.Fatalf("result by %q after %d attempts (eager ran: %d); want the slow worker's only attempt", res.By, info.Attempt, len(stolen))
		}
	})
}

// A redelivered run (its worker SIGKILLed) sees every signal in order,
// including those sent before the crash, and skips its completed step,
// whose ID is the same on both attempts.
func TestRedeliveredRunReplaysSignalsAndSkipsSteps(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		helper := startHelperWorker(t, "durable", b)
		next := helper.Next
		ref, err := client.RunNoWait(ctx, c, durableTask, in{ID: "order-9"})
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(next())
		if len(f) != 3 || f[0] != "step" || f[1] != "receipt-1" {
			t.Fatalf("helper said %v", f)
		}
		chargeStep := f[2]
		var sent []string
		for i := 0; i < 2; i++ {
			rec, err := c.Signal(ctx, "order-9", map[string]int{"n": i})
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, rec.TriggerInfo().SignalID)
			if l := next(); l != "signal "+rec.TriggerInfo().SignalID {
				t.Fatalf("helper said %q, want signal %s", l, rec.TriggerInfo().SignalID)
			}
		}
		helper.Kill()
		rec, err := c.Signal(ctx, "order-9", map[string]int{"n": 2})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, rec.TriggerInfo().SignalID)

		cnt := counter{b.Client, "taskq:{" + b.Namespace + "}:test:"}
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, durableTask, durableHandler(cnt, 3, func(string) {}))
		})
		res, err := client.Ref[durableOut](c, ref.ID()).Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(res.Signals) != fmt.Sprint(sent) {
			t.Fatalf("redelivered attempt saw signals %v, want %v in order", res.Signals, sent)
		}
		if res.Receipt != "receipt-1" || b.Client.Get(ctx, cnt.key+"charges").Val() != "1" {
			t.Fatalf("step ran again: receipt %q, charges %s", res.Receipt, b.Client.Get(ctx, cnt.key+"charges").Val())
		}
		info, _ := ref.Get(ctx)
		if info.Attempt != 2 {
			t.Fatalf("attempt %d, want 2", info.Attempt)
		}
		if res.ChargeStep != "" {
			t.Fatalf("step function ran on the redelivered attempt (step %q)", res.ChargeStep)
		}
		if chargeStep != res.RunStep+"/charge" {
			t.Fatalf("step ID on the first attempt %q, derived on the second %q", chargeStep, res.RunStep+"/charge")
		}
	})
}
