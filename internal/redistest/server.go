package redistest

import (
	"context"
	"errors"
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
	exited  chan struct{} // closed once cmd has ended
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
	return startServer(t, wrapper, func() []string { return extra })
}

// startServer starts a server with the config args extra gives, on a
// free port. A port found free can be taken by another process before the
// server binds it (test binaries start many servers at once); the server
// then exits at once, and it is started again on other ports, with args
// extra gives anew (a cluster node's bus port, say).
func startServer(t testing.TB, wrapper []string, extra func() []string) *Server {
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
	s := &Server{t: t, Dir: t.TempDir(), Wrapper: wrapper}
	t.Cleanup(s.Stop)
	const tries = 5
	for try := 1; ; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Port = port
		s.Args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", s.Dir,
			"--appendonly", "yes", "--appendfsync", "always", "--save", "",
			"--logfile", filepath.Join(s.Dir, "redis.log"),
		}, extra()...)
		err = s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errExitedAtStart) || try == tries {
			t.Fatalf("redistest: %v", err)
		}
		t.Logf("redistest: %v; starting it on another port", err)
	}
}

// errExitedAtStart is a server process that ended before it answered:
// most often, its port was taken.
var errExitedAtStart = errors.New("redis-server exited as it started")

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Pid is the process ID of the running server, or of its wrapper.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Start (re)starts the process and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// start starts the process and waits until it answers as itself: a
// server that answers on the port with another process ID is another
// test's, which took the port first.
func (s *Server) start() error {
	argv := append(append(append([]string{}, s.Wrapper...), "redis-server"), s.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := startTied(cmd); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("%w on port %d (see %s)", errExitedAtStart, s.Port, filepath.Join(s.Dir, "redis.log"))
		default:
		}
		// The port first: a client dialling a server still starting
		// (slowly, under a wrapper) logs each failed dial.
		if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
			_ = c.Close()
			pid, err := serverPID(s.Addr())
			if err == nil && (s.Wrapper != nil || pid == cmd.Process.Pid) || errors.Is(err, errNoInfo) {
				return nil
			}
			// Another process's server may hold the port: ours cannot
			// bind it, and exits.
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on port %d did not answer within 30s", s.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the process at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
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
