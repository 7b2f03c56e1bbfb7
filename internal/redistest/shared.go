package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultAddrEnv overrides the address Real tries when URLEnv is not set
// (default 127.0.0.1:6379). It exists so the harness's own tests can point
// it at a closed port; nobody else needs it.
const DefaultAddrEnv = "TASKQ_TEST_REDIS_DEFAULT_ADDR"

// DefaultAddr is where Real looks for a running Redis first.
const DefaultAddr = "127.0.0.1:6379"

// InstallHint says how to get redis-server.
const InstallHint = "install it (apt-get install -y redis-server)"

// The real Redis the tests of this process share: found or started once.
var shared struct {
	once sync.Once
	url  string
	err  error
}

// sharedURL returns the URL of the real Redis the tests of this process
// share. The first call decides (see resolve); when it starts a private
// server it also sets URLEnv to its URL, so that code reading the variable
// and child processes (which inherit it) use the same server.
func sharedURL() (string, error) {
	shared.once.Do(func() {
		shared.url, shared.err = resolve(os.Getenv, ping, startPrivate)
		if shared.err == nil && os.Getenv(URLEnv) == "" {
			_ = os.Setenv(URLEnv, shared.url)
		}
	})
	return shared.url, shared.err
}

// resolve decides which real Redis the tests use:
//   - URLEnv, when set: it must answer, or every test using it fails;
//   - otherwise a Redis answering at DefaultAddrEnv's address (default
//     127.0.0.1:6379);
//   - otherwise a private redis-server that start starts for this process.
//
// getenv, ping and start are parameters so that the decision can be tested
// without touching the shared server.
func resolve(getenv func(string) string, ping func(url string) error, start func() (string, error)) (string, error) {
	if url := getenv(URLEnv); url != "" {
		if _, err := redis.ParseURL(url); err != nil {
			return "", fmt.Errorf("redistest: %s: %w", URLEnv, err)
		}
		if err := ping(url); err != nil {
			return "", fmt.Errorf("redistest: the Redis %s names (%s) is not reachable: %w", URLEnv, url, err)
		}
		return url, nil
	}
	addr := getenv(DefaultAddrEnv)
	if addr == "" {
		addr = DefaultAddr
	}
	url := "redis://" + addr + "/0"
	if ping(url) == nil {
		return url, nil
	}
	url, err := start()
	if err != nil {
		return "", fmt.Errorf("redistest: no Redis answers at %s and %w", addr, err)
	}
	return url, nil
}

// ping reports whether a Redis answers PING at url, within a second or two.
func ping(url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	installLibLog()
	opt.DialTimeout, opt.MaxRetries, opt.PoolSize = time.Second, -1, 1
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// startPrivate starts a redis-server of this process's own on a free
// loopback port, without persistence, and returns its URL. The server is
// tied to this process (see startTied): it ends when the process ends,
// however it ends, so it needs no stopping and cannot outlive the run.
func startPrivate() (string, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "", fmt.Errorf("redis-server is not installed: %s, or set %s", InstallHint, URLEnv)
	}
	var last error
	for try := 0; try < 3; try++ { // another process may take the free port first
		url, err := startPrivateOnce()
		if err == nil {
			return url, nil
		}
		last = err
	}
	return "", last
}

func startPrivateOnce() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return startTiedServer(port, os.TempDir())
}

// startTiedServer starts a redis-server tied to this process (see
// startTied) on loopback port port, without persistence, with extra
// config args, and returns its URL once it answers.
func startTiedServer(port int, dir string, extra ...string) (string, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server", append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", "", "--loglevel", "warning"}, extra...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startTied(cmd); err != nil {
		return "", fmt.Errorf("could not start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	url := "redis://" + addr + "/0"
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("the private redis-server on port %d exited at once: %s", port, oneLine(out.String()))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			// Another process's server may hold the port (ours then
			// exits): only ours answers with our process ID.
			if pid, err := serverPID(addr); err == nil && pid == cmd.Process.Pid {
				return url, nil
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return "", fmt.Errorf("the private redis-server on port %d did not answer within 15s", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errNoInfo is a server that answers but does not serve INFO, so cannot
// say its process ID.
var errNoInfo = errors.New("the server answers, without INFO")

// serverPID is the process ID the Redis at addr reports, or errNoInfo.
func serverPID(addr string) (int, error) {
	installLibLog()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil && strings.HasPrefix(err.Error(), "ERR unknown command") {
		// A server started with INFO renamed away answers PING only.
		if err := rdb.Ping(ctx).Err(); err != nil {
			return 0, err
		}
		return 0, errNoInfo
	}
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server without process_id")
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

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	return s
}
