package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process of the test's own, on a free loopback
// port, for tests that kill or restart Redis. It is never the shared one.
// It is stopped when the test ends, and killed with the test binary should
// that end first (a panic, a -timeout).
type Server struct {
	t    testing.TB
	Port int
	Dir  string
	Args []string
	// Wrapper, when set, is a command (and its arguments) that runs
	// redis-server, such as valgrind.
	Wrapper []string
	cmd     *exec.Cmd
}

// StartServer starts redis-server with AOF (appendfsync always) in a
// temporary directory, plus extra config args (later ones override), and
// stops it when the test ends.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	return StartServerUnder(t, nil, extra...)
}

// StartServerUnder is StartServer with redis-server run by wrapper, a
// command and its arguments (valgrind, say), where the process to signal
// is the wrapper's (see Pid).
func StartServerUnder(t testing.TB, wrapper []string, extra ...string) *Server {
	t.Helper()
	CaptureLibraryLog(t)
	for _, tool := range append([]string{"redis-server"}, wrapper[:min(len(wrapper), 1)]...) {
		if _, err := exec.LookPath(tool); err != nil {
			if tool == "redis-server" {
				t.Fatalf("redistest: redis-server is not installed: %s", InstallHint)
			}
			t.Fatalf("redistest: %s is not installed: %v", tool, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &Server{t: t, Port: port, Dir: t.TempDir(), Wrapper: wrapper}
	s.Args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
	}, extra...)
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Pid is the process ID of the running server, or of its wrapper.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Start (re)starts the process and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	argv := append(append(append([]string{}, s.Wrapper...), "redis-server"), s.Args...)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := startTied(s.cmd); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	// The port first: a client dialling a server still starting (slowly,
	// under a wrapper) logs each failed dial.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server on port %d did not listen", s.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redistest: redis-server on port %d did not answer", s.Port)
}

// Kill stops the process at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
		s.cmd = nil
	}
}

// Restart kills the process and starts it again on the same port and data.
func (s *Server) Restart() {
	s.Kill()
	s.Start()
}

// Stop ends the process.
func (s *Server) Stop() { s.Kill() }

// StartReplica starts a read-only replica of master, on a free loopback
// port of its own, and waits until its first sync is done: its writes are
// refused with READONLY, as a demoted master's are after a failover. Start
// master with "--repl-diskless-sync-delay", "0", or the first sync waits
// five seconds for other replicas.
func StartReplica(t testing.TB, master *Server, extra ...string) *Server {
	t.Helper()
	r := StartServer(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}, extra...)...)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rdb.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := rdb.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica on port %d did not sync with its master on %d: %v %s", r.Port, master.Port, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
