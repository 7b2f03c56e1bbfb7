package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestResolveChoosesTheServer(t *testing.T) {
	noStart := func() (string, error) { t.Fatal("a private server was started"); return "", nil }
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	pinged := []string{}
	answers := func(up ...string) func(string) error {
		return func(url string) error {
			pinged = append(pinged, url)
			for _, u := range up {
				if u == url {
					return nil
				}
			}
			return errors.New("connection refused")
		}
	}

	t.Run("the URL in TASKQ_TEST_REDIS_URL", func(t *testing.T) {
		url, err := resolve(env(URLEnv, "redis://127.0.0.1:7000/2"), answers("redis://127.0.0.1:7000/2"), noStart)
		if err != nil || url != "redis://127.0.0.1:7000/2" {
			t.Fatalf("got %q, %v", url, err)
		}
	})
	t.Run("TASKQ_TEST_REDIS_URL not answering fails, starting nothing", func(t *testing.T) {
		_, err := resolve(env(URLEnv, "redis://127.0.0.1:7000/0"), answers("redis://127.0.0.1:6379/0"), noStart)
		if err == nil || !strings.Contains(err.Error(), URLEnv) || !strings.Contains(err.Error(), "not reachable") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a malformed TASKQ_TEST_REDIS_URL fails", func(t *testing.T) {
		_, err := resolve(env(URLEnv, "http://x"), answers(), noStart)
		if err == nil || !strings.Contains(err.Error(), URLEnv) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a Redis answering at 127.0.0.1:6379", func(t *testing.T) {
		url, err := resolve(env(), answers("redis://127.0.0.1:6379/0"), noStart)
		if err != nil || url != "redis://127.0.0.1:6379/0" {
			t.Fatalf("got %q, %v", url, err)
		}
	})
	t.Run("nothing answering: a private server", func(t *testing.T) {
		pinged = nil
		url, err := resolve(env(DefaultAddrEnv, "127.0.0.1:1"), answers(),
			func() (string, error) { return "redis://127.0.0.1:40000/0", nil })
		if err != nil || url != "redis://127.0.0.1:40000/0" {
			t.Fatalf("got %q, %v", url, err)
		}
		if len(pinged) != 1 || pinged[0] != "redis://127.0.0.1:1/0" {
			t.Fatalf("pinged %v; want the address of %s", pinged, DefaultAddrEnv)
		}
	})
	t.Run("nothing answering and no redis-server: one line saying how to install it", func(t *testing.T) {
		_, err := resolve(env(), answers(), func() (string, error) {
			return "", fmt.Errorf("redis-server is not installed: %s, or set %s", InstallHint, URLEnv)
		})
		if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") ||
			!strings.Contains(err.Error(), "127.0.0.1:6379") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err = %v", err)
		}
	})
}

// helperEnv tells a test binary started by child that it is the child, and
// what to do.
const helperEnv = "REDISTEST_HELPER"

// asChild runs the child's part of the test when the binary is one that
// child started, and reports whether it did; the test then returns. Each
// test that starts children begins with it, so no test is there only to be
// run as a child.
func asChild(t *testing.T) bool {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return false
	}
	childBody(t, mode)
	return true
}

// childBody is what a child does in mode.
func childBody(t *testing.T, mode string) {
	switch mode {
	case "real", "real-then-fail", "real-then-hang":
		b := Real(t)
		ctx := context.Background()
		if err := b.Client.Set(ctx, "taskq:{"+b.Namespace+"}:probe", "1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		pid, err := b.Client.Info(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("url %s env %s pid %s\n", b.URL, os.Getenv(URLEnv), field(pid, "process_id"))
		switch mode {
		case "real-then-fail":
			t.Fatal("failing on purpose")
		case "real-then-hang":
			fmt.Println("hanging")
			select {}
		}
	case "dial-closed", "dial-closed-then-fail":
		CaptureLibraryLog(t)
		rdb := redis.NewClient(&redis.Options{Addr: closedAddr(t), MaxRetries: -1})
		defer rdb.Close()
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("a closed port answered")
		}
		if mode == "dial-closed-then-fail" {
			t.Fatal("failing on purpose")
		}
	}
}

func field(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// child runs the calling test's child part (see asChild) in mode as a
// child process whose environment is the test's without
// TASKQ_TEST_REDIS_URL, plus env.
func child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(top)+"$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, URLEnv+"=") && !strings.HasPrefix(kv, DefaultAddrEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{helperEnv + "=" + mode}, env...)...)
	return cmd
}

// privateURL finds the "url ..." line of a child's output and checks the
// child used a server of its own, and told its environment about it.
func privateURL(t *testing.T, out string, notAddr string) (url, pid string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var env string
		if _, err := fmt.Sscanf(line, "url %s env %s pid %s", &url, &env, &pid); err == nil {
			if strings.Contains(url, notAddr) || env != url || pid == "" {
				t.Fatalf("url %s, %s=%s, pid %s; want a private server, named in %s", url, URLEnv, env, pid, URLEnv)
			}
			return url, pid
		}
	}
	t.Fatalf("the child printed no url:\n%s", out)
	return "", ""
}

// gone waits until nothing answers at url's address any more.
func gone(t *testing.T, url string) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", opt.Addr, time.Second)
		if err != nil {
			return
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the private redis-server at %s still answers after its test binary ended", opt.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func requireRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: %s", InstallHint)
	}
}

// With TASKQ_TEST_REDIS_URL unset and nothing at the default address, a
// test binary starts a redis-server of its own, uses it, and leaves none
// behind: not when it passes, not when a test fails, not when it is killed.
func TestRealStartsAPrivateServerWhenNoneAnswers(t *testing.T) {
	if asChild(t) {
		return
	}
	requireRedisServer(t)
	closed := closedAddr(t)

	t.Run("passing", func(t *testing.T) {
		out, err := child(t, "real", DefaultAddrEnv+"="+closed).CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		url, _ := privateURL(t, string(out), closed)
		gone(t, url)
	})
	t.Run("failing", func(t *testing.T) {
		out, err := child(t, "real-then-fail", DefaultAddrEnv+"="+closed).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "failing on purpose") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		url, _ := privateURL(t, string(out), closed)
		gone(t, url)
	})
	t.Run("killed", func(t *testing.T) {
		cmd := child(t, "real-then-hang", DefaultAddrEnv+"="+closed)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sc.Text() == "hanging" {
				break
			}
		}
		url, _ := privateURL(t, out.String(), closed)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		gone(t, url)
	})
}

func TestRealUsesTheServerAtTheDefaultAddress(t *testing.T) {
	if asChild(t) {
		return
	}
	srv := StartServer(t)
	out, err := child(t, "real", DefaultAddrEnv+"="+srv.Addr()).CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "url redis://"+srv.Addr()+"/0 ") {
		t.Fatalf("the child did not use the server at %s:\n%s", srv.Addr(), out)
	}
}

func TestRealFailsWhenTheNamedServerDoesNotAnswer(t *testing.T) {
	if asChild(t) {
		return
	}
	closed := closedAddr(t)
	out, err := child(t, "real", URLEnv+"=redis://"+closed+"/0").CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed:\n%s", out)
	}
	if !strings.Contains(string(out), URLEnv) || !strings.Contains(string(out), "not reachable") {
		t.Fatalf("want a failure naming %s:\n%s", URLEnv, out)
	}
}

func TestRealWithoutRedisServerSaysHowToInstallIt(t *testing.T) {
	if asChild(t) {
		return
	}
	closed := closedAddr(t)
	out, err := child(t, "real", DefaultAddrEnv+"="+closed, "PATH="+t.TempDir()).CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed:\n%s", out)
	}
	var hits []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "redis-server") {
			hits = append(hits, line)
		}
	}
	if len(hits) != 1 || !strings.Contains(hits[0], "apt-get install -y redis-server") {
		t.Fatalf("want one line saying how to install redis-server, got:\n%s", out)
	}
}

// go-redis's own log lines stay out of a passing test's output, and are in
// the log of a failing one.
func TestLibraryLogGoesToTheTestLog(t *testing.T) {
	if asChild(t) {
		return
	}
	out, err := child(t, "dial-closed").CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "failed to dial") || strings.Contains(string(out), "redis: ") {
		t.Fatalf("a passing test printed go-redis's log:\n%s", out)
	}
	out, err = child(t, "dial-closed-then-fail").CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed:\n%s", out)
	}
	if !strings.Contains(string(out), "go-redis logged") || !strings.Contains(string(out), "failed to dial") {
		t.Fatalf("a failing test's log lacks go-redis's lines:\n%s", out)
	}
}
