package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// slowClient is a raw connection that sends a request's headers and then
// its body a byte at a time, as a slow-body attack does.
type slowClient struct {
	conn net.Conn
	stop chan struct{}
	done chan struct{}
}

// dialSlow connects to addr and starts trickling a POST body of
// Content-Length 1000, one byte every interval, at most 200 bytes (the
// body is never complete).
func dialSlow(t *testing.T, addr string, interval time.Duration) *slowClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &slowClient{conn: conn, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { c.close() })
	head := "POST /api/v1/events HTTP/1.1\r\nHost: taskq\r\nAuthorization: Bearer " + testToken +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"key\":\""
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for range 200 {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte("a")); err != nil {
				return
			}
		}
	}()
	return c
}

func (c *slowClient) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	_ = c.conn.Close()
	<-c.done
}

// answer reads what the server sends until it closes the connection, or
// until within has passed (then it returns an error).
func (c *slowClient) answer(within time.Duration) (string, error) {
	return readUntilClosed(c.conn, within)
}

// readUntilClosed reads conn until the server closes it. A reset counts as
// closed: the server closing a connection with unread bytes of the client
// in its buffer resets it.
func readUntilClosed(conn net.Conn, within time.Duration) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	b, err := io.ReadAll(conn)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil
	}
	return string(b), err
}

// A client that sends its body too slowly is cut off at ReadTimeout with a
// 408 in the API's JSON error shape, and one that never finishes its
// headers at ReadHeaderTimeout; without those deadlines both would hold
// their connection for as long as they liked.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	s := serve(t, redistest.Mini(t), envOptions{server: Options{
		ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
	}})
	addr := strings.TrimPrefix(s.url, "http://")

	slow := dialSlow(t, addr, 150*time.Millisecond)
	start := time.Now()
	got, err := slow.answer(10 * time.Second)
	if err != nil {
		t.Fatalf("a slow-body client still held its connection after %s: %v (read %q)", time.Since(start), err, got)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("answer to the slow body is not HTTP: %v: %q", err, got)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"error":"request_timeout"`) ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("answer to the slow body: %d %s %s", resp.StatusCode, resp.Header, body)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: taskq\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := readUntilClosed(conn, 10*time.Second); err != nil {
		t.Fatalf("a client that never finished its headers still held its connection: %v", err)
	}
}

// With more slow clients than MaxConnections, the server never holds more
// connections than that (the rest wait in the listen queue), /healthz
// answers at once while there is room, and answers once the slow clients
// are cut off when there is none.
func TestConnectionLimitUnderSlowClients(t *testing.T) {
	t.Parallel()
	const limit = 8
	s := serve(t, redistest.Mini(t), envOptions{server: Options{
		MaxConnections: limit, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
	}})
	addr := strings.TrimPrefix(s.url, "http://")
	healthz := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(s.url + "/healthz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}

	var peak int64
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			mu.Lock()
			peak = max(peak, s.s.metrics.openConns.Load())
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()

	// Room left: /healthz answers well before any slow client is cut off.
	for range limit - 3 {
		dialSlow(t, addr, 100*time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := healthz(1500 * time.Millisecond); err != nil {
		t.Fatalf("/healthz with %d slow clients connected and room for more: %v", limit-3, err)
	}

	// No room: three times the limit in slow clients. /healthz waits its
	// turn and gets it as ReadTimeout cuts them off.
	for range 2 * limit {
		dialSlow(t, addr, 100*time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := healthz(30 * time.Second); err != nil {
		t.Fatalf("/healthz after the slow clients: %v", err)
	}
	t.Logf("/healthz answered after %s behind %d slow clients", time.Since(start).Round(time.Millisecond), 3*limit-3)
	cancel()
	<-sampled
	if peak > limit {
		t.Fatalf("the server held %d connections at once, over MaxConnections %d", peak, limit)
	}
	if peak < limit-3 {
		t.Fatalf("peak of %d open connections: the gauge did not count the slow clients", peak)
	}
}

// A long-poll answers after its wait even when that is past WriteTimeout:
// it moves its own write deadline, where any other answer is bounded by
// WriteTimeout.
func TestLongPollOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	// The answer after the wait has WriteTimeout to be written in: 1 s,
	// which a loaded machine running -race does not miss as it did 200 ms.
	s := serve(t, redistest.Mini(t), envOptions{server: Options{WriteTimeout: time.Second}})
	s.register(task.Spec{Name: "idle", Expression: `input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	// The run is triggered through the client: a trigger over HTTP is
	// bounded by the WriteTimeout too.
	def, err := s.c.Definition(context.Background(), "idle")
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.c.TriggerJSON(context.Background(), def, []byte(`{"id":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	start := time.Now()
	r := s.call("GET", "/api/v1/runs/"+id+"/result?wait=2500ms", nil).expect(t, http.StatusAccepted)
	if r.str("status") != "queued" || time.Since(start) < 2500*time.Millisecond {
		t.Fatalf("long-poll after %s: %s", time.Since(start), r.raw)
	}
}

// However short the wait, an expired one answers the run's current state:
// go-redis reports a deadline passing mid-command as a network timeout,
// which once came back as 503 redis_unavailable while Redis was fine.
func TestTinyWaitAnswersTheRunsState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Real(t), envOptions{})
	e.register(task.Spec{Name: "idle", Expression: `input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	id := e.call("POST", "/api/v1/tasks/idle/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated).str("runId")
	waits := []string{"1ns", "1us", "10us", "100us", "300us", "1ms", "2ms"}
	for i := range 210 {
		w := waits[i%len(waits)]
		r := e.call("GET", "/api/v1/runs/"+id+"/result?wait="+w, nil)
		if r.status != http.StatusAccepted || r.str("status") != "queued" {
			t.Fatalf("try %d, wait=%s: %d %s", i, w, r.status, r.raw)
		}
	}
}
