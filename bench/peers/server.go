package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a private redis-server on a free loopback port, with no
// persistence, that nothing but the benchmark talks to: its INFO counters
// are the benchmark's alone.
type server struct {
	cmd     *exec.Cmd
	addr    string
	dir     string
	version string
}

// url is the server's redis:// URL, database 0.
func (s *server) url() string { return "redis://" + s.addr + "/0" }

// stop kills the server and removes its directory.
func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	_ = os.RemoveAll(s.dir)
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

// startServer starts a redis-server on a free loopback port and waits
// until it answers PING. Another process may take the port between the
// check and the start, so it tries three ports.
func startServer(ctx context.Context) (*server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server is not installed (or pass -redis): %w", err)
	}
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("taskq-peers-%d-", port))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
		cmd.SysProcAttr = dieWithParent()
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server: %w", err)
		}
		s := &server{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
		if s.version, last = waitPing(ctx, s.addr, 5*time.Second); last == nil {
			return s, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		s.stop()
		last = fmt.Errorf("%w: %s", last, lastLine(string(log)))
	}
	return nil, fmt.Errorf("redis-server did not start: %w", last)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// waitPing waits until the server at addr answers PING and returns its
// version.
func waitPing(ctx context.Context, addr string, within time.Duration) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		info, err := c.Info(pctx, "server").Result()
		cancel()
		if err == nil {
			return infoField(info, "redis_version"), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("%s does not answer: %w", addr, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// infoField is the value of field name in an INFO reply, or "?".
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return "?"
}
