package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readyTimeout bounds the Redis ping of /readyz, so that a probe gets an
// answer before its own timeout.
const readyTimeout = 2 * time.Second

// Errors Ready reports.
var (
	ErrNotStarted        = errors.New("the worker has not started")
	ErrShuttingDown      = errors.New("the worker is shutting down")
	ErrNotFetching       = errors.New("the last read of the task streams failed")
	ErrRedisUnreachable  = errors.New("no answer from Redis")
	ErrRedisMayEvictKeys = errors.New("the maxmemory-policy of Redis may evict keys")
)

// Ready reports whether the worker is doing its work: it has started and
// is not shutting down, its last read of the task streams succeeded, Redis
// answers a PING, and the last check of Redis's maxmemory-policy found it
// safe (the last check of its maxmemory-policy). The error is one of ErrNotStarted, ErrShuttingDown,
// ErrNotFetching, ErrRedisUnreachable and ErrRedisMayEvictKeys, wrapping
// the cause where there is one.
func (w *Worker) Ready(ctx context.Context) error {
	w.mu.Lock()
	life, down := w.life, w.shutDown
	w.mu.Unlock()
	switch {
	case down:
		return ErrShuttingDown
	case life == nil:
		return ErrNotStarted
	case life.fetcher.isFailing():
		return ErrNotFetching
	}
	if err := w.store.Ping(ctx); err != nil {
		return errors.Join(ErrRedisUnreachable, err)
	}
	if err := w.guard.Err(); err != nil {
		return errors.Join(ErrRedisMayEvictKeys, err)
	}
	return nil
}

// Handler serves the worker's probes and metrics, for the program to mount
// on a port of its own (it asks for no token: keep it off public networks):
//
//	GET /healthz  200 while the process is up; touches nothing
//	GET /readyz   200 while Ready finds the worker doing its work, else 503
//	              with {"status":"not ready","reason":...}
//	GET /metrics  the worker's Prometheus metrics (see Options.Metrics)
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		writeStatus(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := w.Ready(ctx); err != nil {
			// The reason names what is wrong, not the cause's detail
			// (which may name hosts): the worker's log has that.
			reason := err.Error()
			for _, e := range []error{ErrRedisUnreachable, ErrRedisMayEvictKeys} {
				if errors.Is(err, e) {
					reason = e.Error()
				}
			}
			writeStatus(rw, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": reason})
			return
		}
		writeStatus(rw, http.StatusOK, map[string]string{"status": "ready"})
	})
	return mux
}

func writeStatus(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

// serveProbes serves Handler on Options.HTTPAddr until Shutdown.
func (w *Worker) serveProbes() error {
	ln, err := net.Listen("tcp", w.opts.HTTPAddr)
	if err != nil {
		return fmt.Errorf("worker: HTTPAddr: %w", err)
	}
	w.probes = &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := w.probes.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("taskq: serving metrics and probes failed", "err", err)
		}
	}()
	w.log.Info("taskq worker serving /metrics, /healthz and /readyz", "addr", ln.Addr().String())
	return nil
}
