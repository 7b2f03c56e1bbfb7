//go:build nodecost

package main

// TestNodeCost counts the instructions a redis-server executes per trigger
// under valgrind's callgrind (the same count on every run, whatever the
// machine's load) on four kinds of node: a single node, alone and feeding
// a replica, and a cluster node owning every slot, alone and feeding a
// replica; each with one trigger per call and with RunMany batches of 16,
// and on the cluster node the same batches in a namespace of each
// partition count NODECOST_PARTITIONS lists (comma-separated, "3,6" when
// unset: one and two partitions per master of three; one script call per
// partition a batch touches); and per completed run, triggered in batches
// of 16 and read and finished 16 at a time in each partition, as a worker
// reads under a backlog. It ends with a table of each figure beside the
// single node's of the same kind (alone, or feeding a replica), so the
// ratios of every P come from one run. It tells what a node in cluster
// mode costs beside a single node, apart from the noise of timed figures
// on shared cores. Run it with "make cluster-cost" (valgrind must be
// installed); it is not part of the tests.

import (
	"context"
	"fmt"
	"os"
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
	ps := costPartitions(t)
	noop := task.Must[benchInput, benchResult]("noop", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
	var lines, runLines []string
	// perTrigger and perRun hold each count by kind and P.
	perTrigger, perRun := map[string]map[int]int64{}, map[string]map[int]int64{}
	for _, kind := range []struct {
		name             string
		cluster, replica bool
	}{{"single", false, false}, {"single + replica", false, true}, {"cluster", true, false}, {"cluster + replica", true, true}} {
		perTrigger[kind.name], perRun[kind.name] = map[int]int64{}, map[int]int64{}
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
			measure := func(label string, partitions, batch int) int64 {
				c := costClient(t, url, fmt.Sprintf("cost-%d-%d", partitions, batch), partitions)
				trigger(ctx, t, c, noop, "warm", 50, 1) // loads the script, records the namespace
				ins := m.count(t, func() { trigger(ctx, t, c, noop, "k", n, batch) }) / n
				lines = append(lines, fmt.Sprintf("  %-18s %-32s %8d", kind.name, label, ins))
				return ins
			}
			// A run's whole life: triggered in RunMany batches of 16, then
			// read and finished perCall at a time in each partition, as a
			// worker does under a backlog (it reads at most its free slots
			// / P from each partition, and finishes the runs of a read
			// together), with the handler begun by the finish (a short
			// run).
			measureRuns := func(label string, partitions, perCall int) int64 {
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
				ins := m.count(t, func() { life("k", n) }) / n
				runLines = append(runLines, fmt.Sprintf("  %-18s %-32s %8d", kind.name, label, ins))
				return ins
			}
			measure("P=1, one trigger per call", 1, 1)
			perTrigger[kind.name][1] = measure("P=1, RunMany x16", 1, 16)
			perRun[kind.name][1] = measureRuns("P=1, 16 per read and finish", 1, 16)
			if kind.cluster {
				for _, p := range ps {
					perTrigger[kind.name][p] = measure(fmt.Sprintf("P=%d, RunMany x16", p), p, 16)
					perRun[kind.name][p] = measureRuns(fmt.Sprintf("P=%d, 16 per read and finish", p), p, 16)
				}
			}
		})
	}
	t.Logf("instructions per trigger in the node, %d triggers:\n%s", n, strings.Join(lines, "\n"))
	t.Logf("instructions per completed run in the node (trigger, read, finish), %d runs:\n%s", n, strings.Join(runLines, "\n"))
	t.Logf("side by side, each beside the single node's P=1 of the same kind (alone, or feeding a replica):\n%s",
		costTable(ps, perTrigger, perRun))
}

// costPartitions is the list of P NODECOST_PARTITIONS names, or 3 and 6.
func costPartitions(t *testing.T) []int {
	t.Helper()
	v := os.Getenv("NODECOST_PARTITIONS")
	if v == "" {
		return []int{3, 6}
	}
	var ps []int
	for f := range strings.SplitSeq(v, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 || p > engine.PartitionsMax {
			t.Fatalf("NODECOST_PARTITIONS=%q: %q is not a partition count from 1 to %d", v, f, engine.PartitionsMax)
		}
		ps = append(ps, p)
	}
	return ps
}

// costTable formats the counts per trigger and per completed run of the
// cluster-mode node at P = 1 and each of ps, in thousands of
// instructions, each with its ratio to the single node's P = 1 of the same
// kind.
func costTable(ps []int, perTrigger, perRun map[string]map[int]int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-52s %10s", "", "single P=1")
	for _, p := range append([]int{1}, ps...) {
		fmt.Fprintf(&b, " %18s", fmt.Sprintf("cluster P=%d", p))
	}
	for _, fig := range []struct {
		name   string
		counts map[string]map[int]int64
	}{{"per trigger (RunMany x16)", perTrigger}, {"per completed run (16 per read)", perRun}} {
		for _, kind := range [][2]string{{"single", "cluster"}, {"single + replica", "cluster + replica"}} {
			base := fig.counts[kind[0]][1]
			fmt.Fprintf(&b, "\n  %-52s %9.1fk", fig.name+", "+kind[1], float64(base)/1000)
			for _, p := range append([]int{1}, ps...) {
				c := fig.counts[kind[1]][p]
				ratio := 0.0
				if base > 0 {
					ratio = float64(c) / float64(base)
				}
				fmt.Fprintf(&b, " %18s", fmt.Sprintf("%.1fk (%.2fx)", float64(c)/1000, ratio))
			}
		}
	}
	return b.String()
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
