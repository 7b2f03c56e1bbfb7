package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// The helper process mode: the test binary re-runs itself to trigger from a
// second process. Its environment carries the Redis URL and namespace.
const (
	helperEnv    = "TASKQ_TEST_TRIGGER_HELPER"
	helperNSEnv  = "TASKQ_TEST_TRIGGER_NS"
	helperURLEnv = "TASKQ_TEST_TRIGGER_URL"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(triggerHelper())
	}
	os.Exit(m.Run())
}

var contendedTask = task.Must[orderInput, orderResult]("contended", task.Options{
	Idempotency: task.Status(`"order:" + input.id`, time.Minute),
})

// triggerHelper fires N triggers of one key and prints one line per trigger:
// "ok <run id>" or "dup <owner id>".
func triggerHelper() int {
	var n int
	fmt.Sscan(os.Getenv(helperEnv), &n)
	// RedisURL: one node's or the cluster's.
	c, err := client.New(client.Options{RedisURL: os.Getenv(helperURLEnv), Namespace: os.Getenv(helperNSEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 10; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/10; i++ {
				line := triggerOnce(c)
				mu.Lock()
				fmt.Fprintln(out, line)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}

func triggerOnce(c *client.Client) string {
	ref, err := client.RunNoWait(context.Background(), c, contendedTask, orderInput{ID: "7"})
	var coll *client.IdempotencyCollisionError
	switch {
	case err == nil:
		return "ok " + ref.ID()
	case errors.As(err, &coll):
		return "dup " + coll.ExistingRunID
	default:
		return "err " + err.Error()
	}
}

// 1,000 triggers of one key from 50 goroutines and two separate processes
// end with exactly one run, and every rejection names it.
func TestConcurrentTriggersOfOneKeyMakeOneRun(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		url := b.URL

		var (
			mu    sync.Mutex
			lines []string
			wg    sync.WaitGroup
		)
		start := make(chan struct{})
		for g := 0; g < 50; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < 12; i++ {
					l := triggerOnce(c)
					mu.Lock()
					lines = append(lines, l)
					mu.Unlock()
				}
			}()
		}
		var procs []*exec.Cmd
		var outs []*strings.Builder
		for p := 0; p < 2; p++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=200", helperNSEnv+"="+b.Namespace, helperURLEnv+"="+url)
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, os.Stderr
			procs, outs = append(procs, cmd), append(outs, out)
		}
		for _, p := range procs {
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
		}
		close(start)
		wg.Wait()
		for i, p := range procs {
			if err := p.Wait(); err != nil {
				t.Fatalf("helper process %d: %v", i, err)
			}
			lines = append(lines, strings.Split(strings.TrimSpace(outs[i].String()), "\n")...)
		}
		if len(lines) != 1000 {
			t.Fatalf("got %d trigger results, want 1000", len(lines))
		}
		owners := map[string]int{}
		accepted := 0
		for _, l := range lines {
			kind, id, _ := strings.Cut(l, " ")
			switch kind {
			case "ok":
				accepted++
				owners[id]++
			case "dup":
				owners[id]++
			default:
				t.Fatalf("trigger failed: %s", l)
			}
		}
		if accepted != 1 || len(owners) != 1 {
			t.Fatalf("accepted %d runs, rejections named %d distinct owners (%v); want exactly one run", accepted, len(owners), owners)
		}
		ids, _ := clientlink.Store(c).ListRunIDs(context.Background(), 0, 10)
		if len(ids) != 1 {
			t.Fatalf("runs in Redis: %v, want 1", ids)
		}
	})
}
