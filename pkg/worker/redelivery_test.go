package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

func TestMain(m *testing.M) {
	if os.Getenv(workerHelperEnv) != "" {
		os.Exit(hangingWorker())
	}
	os.Exit(m.Run())
}

func hangingWorker() int {
	opt, _ := redis.ParseURL(os.Getenv(workerURLEnv))
	w, err := worker.New(worker.Options{
		Redis: redis.NewClient(opt), Namespace: os.Getenv(workerNSEnv),
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

// A worker process SIGKILLed mid-run: after its lease lapses the run
// completes on another worker, with the same step ID, and its key is held
// until then.
func TestKilledWorkersRunIsRedelivered(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	c := newClient(t, b)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerHelperEnv+"=1", workerNSEnv+"="+b.Namespace, workerURLEnv+"="+redisURL())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	ref, err := client.RunNoWait(ctx, c, crashTask, in{ID: "crash-1"})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var firstStep string
	select {
	case l := <-lines:
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != ref.ID() {
			t.Fatalf("helper said %q", l)
		}
		firstStep = f[2]
	case <-time.After(10 * time.Second):
		t.Fatal("helper worker never started the run")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
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
}

// A slow worker that keeps heartbeating keeps its run, however long it
// takes, while another worker is idle and eager.
func TestSlowLiveWorkerKeepsItsRun(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	c := newClient(t, b)
	tk := task.Must[in, out]("slow-live", task.Options{})
	started := make(chan struct{})
	startWorker(t, b, worker.Options{Name: "slow", LeaseDuration: 300 * time.Millisecond}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			close(started)
			time.Sleep(1500 * time.Millisecond) // five leases
			return out{By: "slow"}, nil
		})
	})
	ref, err := client.RunNoWait(ctx, c, tk, in{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stolen := make(chan struct{}, 1)
	startWorker(t, b, worker.Options{Name: "eager", LeaseDuration: 300 * time.Millisecond}, func(w *worker.Worker) {
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
}
