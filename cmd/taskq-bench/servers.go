package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Private servers for the cluster mode: a single node and a Redis Cluster
// of masters × (1 + replicas) nodes, each a redis-server of the
// benchmark's own on free loopback ports, with no persistence, stopped
// (killed, their directories removed) when the benchmark ends. Nothing else
// talks to them, so their INFO counters are the benchmark's alone.

// server is one redis-server the benchmark started.
type server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

// servers are the redis-servers the benchmark started, stopped together.
type servers struct {
	all []*server
}

// stop kills every server and removes its directory.
func (s *servers) stop() {
	for _, sv := range s.all {
		if sv.cmd.Process != nil {
			_ = sv.cmd.Process.Kill()
			_ = sv.cmd.Wait()
		}
		_ = os.RemoveAll(sv.dir)
	}
	s.all = nil
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start starts a redis-server on a free loopback port with extra config
// args and waits until it answers PING.
func (s *servers) start(ctx context.Context, extra ...string) (*server, error) {
	var last error
	for try := 0; try < 3; try++ { // another process may take the port first
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("taskq-bench-%d-", port))
		if err != nil {
			return nil, err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
		cmd := exec.Command("redis-server", args...)
		// The servers die with the benchmark, even when it is killed.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server: %w", err)
		}
		sv := &server{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
		s.all = append(s.all, sv)
		if last = waitPing(ctx, sv.addr, 5*time.Second); last == nil {
			return sv, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		s.all = s.all[:len(s.all)-1]
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		_ = os.RemoveAll(dir)
		last = fmt.Errorf("%w: %s", last, lastLine(string(log)))
	}
	return nil, fmt.Errorf("redis-server did not start: %w", last)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func waitPing(ctx context.Context, addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s does not answer: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startSingle starts the single node with replicas replicas of its own
// (so that it feeds replicas as each cluster master does) and waits until
// they have synced.
func (s *servers) startSingle(ctx context.Context, replicas int) (string, error) {
	sv, err := s.start(ctx)
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(sv.addr)
	for range replicas {
		r, err := s.start(ctx, "--replicaof", host, port, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
		if err != nil {
			return "", err
		}
		if err := waitSynced(ctx, r.addr, 30*time.Second); err != nil {
			return "", err
		}
	}
	return "redis://" + sv.addr + "/0", nil
}

// waitSynced waits until the replica at addr says its link to its master
// is up.
func waitSynced(ctx context.Context, addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		repl, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(repl, "master_link_status:up") {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("replica %s has not synced within %s", addr, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startCluster starts masters × (1 + replicas) cluster-mode servers, forms
// a cluster of them with redis-cli --cluster create, waits until every node
// says cluster_state:ok and every replica has synced, and returns its
// redis+cluster:// URL with every node a seed.
func (s *servers) startCluster(ctx context.Context, masters, replicas int) (string, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return "", errors.New("redis-cli is not installed (it forms the cluster)")
	}
	var addrs []string
	for range masters * (1 + replicas) {
		bus, err := freePort()
		if err != nil {
			return "", err
		}
		sv, err := s.start(ctx, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
		if err != nil {
			return "", err
		}
		addrs = append(addrs, sv.addr)
	}
	args := append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, "redis-cli", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("redis-cli --cluster create: %w: %s", err, lastLine(out.String()))
	}
	if err := waitClusterReady(ctx, addrs, masters, 60*time.Second); err != nil {
		return "", err
	}
	return "redis+cluster://" + strings.Join(addrs, ",") + "/", nil
}

// waitClusterReady waits until every node at addrs says cluster_state:ok
// and sees masters masters and the rest as replicas, and every replica's
// link to its master is up.
func waitClusterReady(ctx context.Context, addrs []string, masters int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			info, err := c.ClusterInfo(pctx).Result()
			nodes, nerr := c.ClusterNodes(pctx).Result()
			repl, rerr := c.Info(pctx, "replication").Result()
			cancel()
			if err == nil && nerr == nil && rerr == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Count(nodes, "master") == masters && strings.Count(nodes, "slave") == len(addrs)-masters &&
				(strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				_ = c.Close()
				return fmt.Errorf("cluster node %s not ready within %s", a, within)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nil
}
