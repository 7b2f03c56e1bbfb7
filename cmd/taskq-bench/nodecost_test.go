//go:build nodecost

package main

// TestNodeCost counts the instructions a redis-server executes per trigger
// under valgrind's callgrind (the same count on every run, whatever the
// machine's load) on four kinds of node: a single node, alone and feeding
// a replica, and a cluster node owning every slot, alone and feeding a
// replica; each with one trigger per call and with RunMany batches of 16,
// and on the cluster node the same batches in a namespace of 6 and of 24
// partitions (one script call per partition a batch touches); and per
// completed run, triggered in batches of 16 and read and finished as a
// worker of 100 slots does, 16 at a time on one partition or each of 6, 4
// at a time in each of 24. It tells
// what a node in cluster mode costs beside a single node, apart from the
// noise of timed figures on shared cores. Run it with "make cluster-cost"
// (valgrind must be installed); it is not part of the tests.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

func TestNodeCost(t *testing.T) {
	if _, err := exec.LookPath("callgrind_control"); err != nil {
		t.Fatalf("valgrind (with callgrind_control) is needed: %v", err)
	}
	const n = 1600
	ctx := context.Background()
	noop := task.Must[benchInput, benchResult]("noop", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
	var lines, runLines []string
	for _, kind := range []struct {
		name             string
		cluster, replica bool
	}{{"single", false, false}, {"single + replica", false, true}, {"cluster", true, false}, {"cluster + replica", true, true}} {
		// A subtest each, so that each kind's servers stop before the next
		// starts.
		t.Run(kind.name, func(t *testing.T) {
			m := startCounted(t, kind.cluster, true)
			url := "redis://" + m.addr + "/0"
			if kind.cluster {
				if err := m.rdb.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
					t.Fatal(err)
				}
				url = "redis+cluster://" + m.addr + "/"
			}
			if kind.replica {
				m.addReplica(t)
			}
			if kind.cluster {
				waitFor(t, "cluster_state:ok", func() bool {
					info, _ := m.rdb.ClusterInfo(ctx).Result()
					return strings.Contains(info, "cluster_state:ok")
				})
			}
			measure := func(label string, partitions, batch int) {
				c := costClient(t, url, fmt.Sprintf("cost-%d-%d", partitions, batch), partitions)
				trigger(ctx, t, c, noop, "warm", 50, 1) // loads the script, records the namespace
				ins := m.count(t, func() { trigger(ctx, t, c, noop, "k", n, batch) })
				lines = append(lines, fmt.Sprintf("  %-18s %-32s %8d", kind.name, label, ins/n))
			}
			// A run's whole life: triggered in RunMany batches of 16, then
			// read and finished perCall at a time in each partition, as a
			// worker of 100 slots does under a backlog (it reads at most
			// its free slots / P from each partition, and finishes the
			// runs of a read together), with the handler begun by the
			// finish (a short run).
			measureRuns := func(label string, partitions, perCall int) {
				ns := fmt.Sprintf("runs-%d-%d", partitions, perCall)
				c := costClient(t, url, ns, partitions)
				var rdb redis.UniversalClient = redis.NewClient(&redis.Options{Addr: m.addr, ReadTimeout: time.Minute})
				if kind.cluster {
					rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.addr}, ReadTimeout: time.Minute})
				}
				defer rdb.Close()
				st := redisstore.NewPartitioned(rdb, ns, partitions)
				if err := st.EnsureGroup(ctx, "noop"); err != nil {
					t.Fatal(err)
				}
				life := func(prefix string, runs int) {
					trigger(ctx, t, c, noop, prefix, runs, 16)
					for done := 0; done < runs; {
						for part := range partitions {
							ds, err := st.ReadGroup(ctx, part, "w1", []string{"noop"}, perCall, -1)
							if err != nil {
								t.Fatal(err)
							}
							if len(ds) == 0 {
								continue
							}
							now := time.Now()
							ps := make([]*engine.FinishParams, len(ds))
							for k, d := range ds {
								ps[k] = &engine.FinishParams{RunID: d.RunID, Attempt: d.Spec.Attempts + 1,
									Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: now, Task: d.Task,
									EntryID: d.EntryID, Spec: d.Spec, Began: now, Consumer: "w1"}
							}
							res, errs := st.FinishBatch(ctx, ps)
							for k := range ps {
								if errs[k] != nil || !res[k].Written {
									t.Fatalf("finish %s: %+v, %v", ps[k].RunID, res[k], errs[k])
								}
							}
							done += len(ds)
						}
					}
				}
				life("warm", 50) // loads the scripts, records the namespace
				ins := m.count(t, func() { life("k", n) })
				runLines = append(runLines, fmt.Sprintf("  %-18s %-32s %8d", kind.name, label, ins/n))
			}
			measure("P=1, one trigger per call", 1, 1)
			measure("P=1, RunMany x16", 1, 16)
			measureRuns("P=1, 16 per read and finish", 1, 16)
			if kind.cluster {
				// P = 6 is two partitions per master of three, the
				// smallest P that spreads evenly over them with room for
				// one more master each; P = 24 is eight.
				measure("P=6, RunMany x16", 6, 16)
				measure("P=24, RunMany x16", 24, 16)
				measureRuns("P=6, 16 per read and finish", 6, 16)
				measureRuns("P=24, 4 per read and finish", 24, 4)
			}
		})
	}
	t.Logf("instructions per trigger in the node, %d triggers:\n%s", n, strings.Join(lines, "\n"))
	t.Logf("instructions per completed run in the node (trigger, read, finish), %d runs:\n%s", n, strings.Join(runLines, "\n"))
}

// costClient returns a client of namespace ns with partitions partitions
// that sends each trigger or RunMany as it comes (no batching), closed
// when the test ends.
func costClient(t *testing.T, url, ns string, partitions int) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{RedisURL: url, Namespace: ns, Partitions: partitions,
		DisableTriggerBatching: true, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// trigger triggers runs of noop with the keys prefix-0 .. prefix-(n-1),
// batch at a time: RunMany, or RunNoWait for a batch of 1.
func trigger(ctx context.Context, t *testing.T, c *client.Client, noop *task.Task[benchInput, benchResult], prefix string, n, batch int) {
	t.Helper()
	for i := 0; i < n; i += batch {
		in := make([]benchInput, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			in = append(in, benchInput{ID: fmt.Sprintf("%s-%d", prefix, j)})
		}
		var err error
		if batch == 1 {
			_, err = client.RunNoWait(ctx, c, noop, in[0])
		} else {
			_, err = client.RunMany(ctx, c, noop, in)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// counted is a redis-server of the test's own, under callgrind when asked.
type counted struct {
	cmd     *exec.Cmd
	addr    string
	bus     int
	rdb     *redis.Client
	out     string
	dumps   int
	cluster bool
}

func startCounted(t *testing.T, cluster, callgrind bool) *counted {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &counted{addr: fmt.Sprintf("127.0.0.1:%d", port), out: filepath.Join(dir, "callgrind.out"), cluster: cluster}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"}
	if cluster {
		if s.bus, err = freePort(); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--cluster-port", strconv.Itoa(s.bus))
	}
	name := "redis-server"
	if callgrind {
		args = append([]string{"--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=" + s.out, name}, args...)
		name = "valgrind"
	}
	s.cmd = exec.Command(name, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	if err := waitPing(context.Background(), s.addr, time.Minute); err != nil {
		t.Fatal(err)
	}
	s.rdb = redis.NewClient(&redis.Options{Addr: s.addr, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = s.rdb.Close() })
	return s
}

// addReplica starts a replica of s (not counted) and waits until it has
// synced.
func (s *counted) addReplica(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	host, port, _ := strings.Cut(s.addr, ":")
	r := startCounted(t, s.cluster, false)
	if s.cluster {
		if err := r.rdb.Do(ctx, "CLUSTER", "MEET", host, port, strconv.Itoa(s.bus)).Err(); err != nil {
			t.Fatal(err)
		}
		id, err := s.rdb.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "CLUSTER REPLICATE", func() bool { return r.rdb.Do(ctx, "CLUSTER", "REPLICATE", id).Err() == nil })
	} else if err := r.rdb.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	if err := waitSynced(ctx, r.addr, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// count returns the instructions the server executed while fn ran.
func (s *counted) count(t *testing.T, fn func()) int64 {
	t.Helper()
	control := func(args ...string) {
		args = append(args, strconv.Itoa(s.cmd.Process.Pid))
		if out, err := exec.Command("callgrind_control", args...).CombinedOutput(); err != nil {
			t.Fatalf("callgrind_control %v: %v\n%s", args, err, out)
		}
	}
	control("-i", "on")
	fn()
	control("-i", "off")
	control("-d")
	s.dumps++
	file := fmt.Sprintf("%s.%d", s.out, s.dumps)
	var total int64
	waitFor(t, "callgrind dump "+file, func() bool {
		var ok bool
		total, ok = redistest.CallgrindTotal(file)
		return ok
	})
	return total
}

// waitFor polls cond for up to a minute (a server under valgrind is slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
