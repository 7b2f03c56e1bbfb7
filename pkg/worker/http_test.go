package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metric reads one sample of the exposition text, or -1 when absent.
func metric(body, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// /metrics counts runs by task and outcome, handler durations, leases
// renewed; /healthz is up throughout; /readyz is ready only between Start
// and Shutdown.
func TestHandlerServesMetricsAndProbes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("observed", task.Options{Retries: 1, Backoff: task.Backoff{Initial: time.Millisecond, Factor: 1}})
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet,
			LeaseDuration: 300 * time.Millisecond, FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			switch x.ID {
			case "slow":
				time.Sleep(350 * time.Millisecond) // past a heartbeat or two
			case "bad":
				return out{}, worker.NonRetryable(errors.New("bad input"))
			case "flaky":
				if ctx.Attempt() == 1 {
					return out{}, errors.New("try again")
				}
			}
			return out{ID: x.ID}, nil
		})
		hs := httptest.NewServer(w.Handler())
		defer hs.Close()

		if code, _ := get(t, hs.URL+"/healthz"); code != http.StatusOK {
			t.Errorf("healthz before Start = %d", code)
		}
		if code, body := get(t, hs.URL+"/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("readyz before Start = %d %s, want 503", code, body)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Shutdown(ctx) }()
		if code, body := get(t, hs.URL+"/readyz"); code != http.StatusOK {
			t.Errorf("readyz once started = %d %s", code, body)
		}
		for _, id := range []string{"ok", "slow", "bad", "flaky"} {
			ref, err := client.RunNoWait(ctx, c, tk, in{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			wait(t, ref)
		}
		// A counter of outcomes moves once the worker has Redis's answer,
		// a moment after a waiter sees the run end.
		want := map[string]float64{
			`taskq_worker_runs_started_total{task="observed"}`:                                 5,
			`taskq_worker_runs_succeeded_total{task="observed"}`:                               3,
			`taskq_worker_runs_failed_total{task="observed"}`:                                  1,
			`taskq_worker_runs_retried_total{task="observed"}`:                                 1,
			`taskq_worker_runs_in_flight{task="observed"}`:                                     0,
			`taskq_worker_handler_duration_seconds_count{outcome="succeeded",task="observed"}`: 3,
		}
		var body string
		eventually(t, "the metrics of four runs", func() bool {
			_, body = get(t, hs.URL+"/metrics")
			for name, v := range want {
				if metric(body, name) != v {
					return false
				}
			}
			return true
		})
		if got := metric(body, "taskq_worker_lease_renewals_total"); got < 1 {
			t.Errorf("lease renewals = %v after a handler ran past a heartbeat", got)
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, hs.URL+"/readyz")
		var r struct{ Status, Reason string }
		_ = json.Unmarshal([]byte(body), &r)
		if code != http.StatusServiceUnavailable || r.Reason != worker.ErrShuttingDown.Error() {
			t.Errorf("readyz after Shutdown = %d %s", code, body)
		}
	})
}

// With its Redis gone, a worker is not ready, and says why; ready again
// once Redis is back.
func TestReadyzFollowsRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	b := &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}
	w := startWorker(t, b, worker.Options{OperationTimeout: 500 * time.Millisecond}, func(w *worker.Worker) {
		worker.Handle(w, task.Must[in, out]("probe", task.Options{}), func(worker.Context, in) (out, error) { return out{}, nil })
	})
	hs := httptest.NewServer(w.Handler())
	defer hs.Close()
	if code, body := get(t, hs.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz = %d %s", code, body)
	}
	srv.Kill()
	code, body := get(t, hs.URL+"/readyz")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Redis gone = %d %s", code, body)
	}
	if code, _ := get(t, hs.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz with Redis gone = %d", code)
	}
	srv.Start()
	eventually(t, "ready again once Redis is back", func() bool {
		code, _ := get(t, hs.URL+"/readyz")
		return code == http.StatusOK
	})
}

// With Options.HTTPAddr the worker serves its probes from Start until
// Shutdown, and an address it cannot listen on fails Start.
func TestHTTPAddrServesProbesWhileTheWorkerRuns(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, HTTPAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	worker.Handle(w, task.Must[in, out]("probed", task.Options{}), func(worker.Context, in) (out, error) { return out{}, nil })
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz = %d %s", code, body)
	}
	if code, body := get(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "taskq_worker_") {
		t.Fatalf("metrics = %d: %s", code, body)
	}

	// A second worker on the same address cannot listen: Start fails and
	// leaves nothing running.
	w2, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, HTTPAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	worker.Handle(w2, task.Must[in, out]("probed", task.Options{}), func(worker.Context, in) (out, error) { return out{}, nil })
	if err := w2.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTPAddr") {
		t.Fatalf("Start on a taken address = %v", err)
	}
	_ = w2.Shutdown(context.Background())

	if err := w.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("probes still served after Shutdown")
	}
}
